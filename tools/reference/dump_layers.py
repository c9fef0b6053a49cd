#!/usr/bin/env python3
"""Debugging aid: dumps HF's fp32 intermediate activations for one prompt so a
mismatch in the C forward pass can be bisected layer by layer.

  dump_layers.py MODEL_DIR --ids 1,2,3 --out DIR [--sublayers]

Writes DIR/index.json and one raw little-endian float32 file per tensor, row-major
[n_tokens][width]:
  embed.f32            embedding output                         [T][hidden]
  layer<i>.f32         residual stream after decoder layer i    [T][hidden]
  final_norm.f32       output of the final (1+w) RMSNorm        [T][hidden]
  logits.f32           lm_head output                            [T][vocab]
with --sublayers also, per layer i:
  layer<i>.input_norm.f32  input_layernorm output
  layer<i>.mixer.f32       linear_attn / self_attn output (before the residual add)
  layer<i>.post_norm.f32   post_attention_layernorm output
  layer<i>.mlp.f32         MLP output (before the residual add)
One full forward pass, no cache (prefill path: chunked GDN for T > 1).
Output is for local debugging, never committed.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinylib as T  # noqa: E402
from make_golden import load  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--out", required=True)
    ap.add_argument("--sublayers", action="store_true")
    a = ap.parse_args()
    ids = [int(x) for x in a.ids.split(",") if x.strip() != ""]
    m = load(a.model_dir)
    text = m.model.language_model if hasattr(m.model, "language_model") else m.model
    os.makedirs(a.out, exist_ok=True)

    captured = []  # (name, tensor) in execution order

    def hook(name):
        def fn(_mod, _inp, out):
            t = out[0] if isinstance(out, tuple) else out
            captured.append((name, t.detach()[0].float().clone()))
        return fn

    hooks = [text.embed_tokens.register_forward_hook(hook("embed"))]
    for i, layer in enumerate(text.layers):
        hooks.append(layer.register_forward_hook(hook("layer%d" % i)))
        if a.sublayers:
            mixer = layer.linear_attn if hasattr(layer, "linear_attn") else layer.self_attn
            hooks.append(layer.input_layernorm.register_forward_hook(hook("layer%d.input_norm" % i)))
            hooks.append(mixer.register_forward_hook(hook("layer%d.mixer" % i)))
            hooks.append(layer.post_attention_layernorm.register_forward_hook(
                hook("layer%d.post_norm" % i)))
            hooks.append(layer.mlp.register_forward_hook(hook("layer%d.mlp" % i)))
    hooks.append(text.norm.register_forward_hook(hook("final_norm")))

    logits = T.full_logits(m, ids)
    for h in hooks:
        h.remove()
    captured.append(("logits", logits))

    index = {"model_dir": os.path.abspath(a.model_dir), "ids": ids,
             "reference": T.reference_string(), "tensors": []}
    for name, t in captured:
        fn = name + ".f32"
        np.ascontiguousarray(t.cpu().numpy().astype("<f4")).tofile(os.path.join(a.out, fn))
        index["tensors"].append({"name": name, "file": fn, "shape": list(t.shape),
                                 "rms": float(t.pow(2).mean().sqrt())})
    T.write_json(os.path.join(a.out, "index.json"), index)
    print("wrote %d tensors to %s" % (len(captured), a.out))


if __name__ == "__main__":
    main()
