#!/usr/bin/env python3
"""Debugging aid: where does a fixture model lose fp32 accuracy?

  conditioning.py MODEL_DIR [--prompt len129] [--sublayers]

Runs the model in float64 (tinylib.to_f64: every op in double, same weight
values) and prints max|HF fp32 - HF fp64| of the logits. With --sublayers it
then re-runs the fp64 model once per sub-block (rotary, each layer's input
norm / mixer / post norm / MLP, final norm, lm_head) with only that sub-block
computed in fp32 (on its fp64 inputs rounded to fp32) and prints the resulting
logit error: the error each sub-block injects times whatever the layers after it
amplify it by. An error that grows with depth (early sub-blocks dominating) is
ill-conditioning of the weights, not a bug. Output is for local use only.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinylib as T  # noqa: E402
from make_golden import load  # noqa: E402


def _cast(v, dt):
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.to(dt)
    if isinstance(v, (tuple, list)):
        return type(v)(_cast(a, dt) for a in v)
    return v


def _text(m):
    return m.model.language_model if hasattr(m.model, "language_model") else m.model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--prompt", default="len129", help="one of the fixture prompts (tinylib.prompts)")
    ap.add_argument("--sublayers", action="store_true")
    a = ap.parse_args()
    ids = {p["name"]: p["ids"] for p in T.prompts()}[a.prompt]
    m32 = load(a.model_dir)
    m64 = T.to_f64(m32)
    x = torch.tensor([ids], dtype=torch.long)
    mods32, mods64 = dict(_text(m32).named_modules()), dict(_text(m64).named_modules())
    mods32["lm_head"], mods64["lm_head"] = m32.lm_head, m64.lm_head
    state = {}

    def hook(name):
        def fn(_mod, args, kwargs, _out):
            mode = state["mode"]
            mode.active = False
            try:
                o = mods32[name](*_cast(args, torch.float32),
                                 **{k: _cast(v, torch.float32) for k, v in kwargs.items()})
            finally:
                mode.active = True
            return _cast(o, torch.float64)
        return fn

    @torch.no_grad()
    def run64(name=None):
        h = mods64[name].register_forward_hook(hook(name), with_kwargs=True) if name else None
        try:
            with T._f64_mode() as mode:
                state["mode"] = mode
                return m64(input_ids=x, use_cache=False).logits[0]
        finally:
            if h:
                h.remove()

    base = run64()
    full = T.full_logits(m32, ids).double()
    print("%s %s: max|HF fp32 - HF fp64| = %.3g (logit std %.3f)"
          % (a.model_dir, a.prompt, float((full - base).abs().max()), float(base.std())))
    if not a.sublayers:
        return
    names = ["rotary_emb"]
    for i, layer in enumerate(_text(m64).layers):
        mixer = "linear_attn" if hasattr(layer, "linear_attn") else "self_attn"
        names += ["layers.%d.input_layernorm" % i, "layers.%d.%s" % (i, mixer),
                  "layers.%d.post_attention_layernorm" % i, "layers.%d.mlp" % i]
    names += ["norm", "lm_head"]
    for n in names:
        print("  only %-34s in fp32: %.3g" % (n, float((run64(n) - base).abs().max())))


if __name__ == "__main__":
    main()
