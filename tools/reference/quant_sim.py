#!/usr/bin/env python3
"""Weight quantization simulated in torch on a fixture model, as an independent check of the
engine's quantizers (tests/model/test_quant_quality.c prints the engine's numbers).

  quant_sim.py [tests/data/models/tiny-trained-bf16] [--golden tests/data/golden/<same name>]

For every prompt of the model's golden manifest, all positions: HF fp32 logits of the stored
(bf16) weights vs the same model with its matrices replaced by
  fp8  torch.float8_e4m3fn of w / s with s = amax/448 per 128x128 block (the official
       Qwen *-FP8 layout; hyla's hy_fp8_quant_rows uses the same rule);
  q8   per row and group of 32 columns: s = amax/127, round to nearest even, clamp +-127;
  q8a  q8 weights AND every matrix input quantized the same way per group of 32 (hyla's Q8
       path is W8A8: hy_quant_act_row);
  q4   per row and group of 32: s = amax/7, levels -8..7 (a plain reference; hyla picks the
       scale minimising the squared error, so it should do a little better).
"selective" quantizes q/k/v/o_proj, in_proj_qkv, in_proj_z, out_proj, gate/up/down_proj
(hyla's default); "all" adds lm_head and in_proj_a/b; "selective+lm_head" and
"selective+in_proj_a/b" add one of them (which one costs the quality). Prints mean/max KL and top-1 agreement.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinylib as T  # noqa: E402
import make_golden as MG  # noqa: E402

SELECTIVE = ("q_proj", "k_proj", "v_proj", "o_proj", "in_proj_qkv", "in_proj_z", "out_proj",
             "gate_proj", "up_proj", "down_proj")
EXTRA = ("lm_head", "in_proj_a", "in_proj_b")


def fp8_block(w, bs=128):
    out = torch.empty_like(w)
    for r in range(0, w.shape[0], bs):
        for c in range(0, w.shape[1], bs):
            b = w[r:r + bs, c:c + bs]
            s = b.abs().max() / 448.0
            if s == 0:
                s = torch.tensor(1.0)
            out[r:r + bs, c:c + bs] = (b / s).to(torch.float8_e4m3fn).float() * s
    return out


def group_quant(w, qmax, qmin, g=32):
    rows, cols = w.shape
    pad = (-cols) % g
    x = torch.nn.functional.pad(w, (0, pad)).reshape(rows, -1, g)
    s = x.abs().amax(-1, keepdim=True) / qmax
    s = torch.where(s == 0, torch.ones_like(s), s)
    q = torch.clamp(torch.round(x / s), qmin, qmax)
    return (q * s).reshape(rows, -1)[:, :cols]


def quantize(name, w, kind):
    if kind == "fp8":
        return fp8_block(w)
    if kind in ("q8", "q8a"):
        return group_quant(w, 127, -127)
    if kind == "q4":
        return group_quant(w, 7, -8)
    raise ValueError(kind)


def act_hook(_mod, inp):
    x = inp[0]
    sh = x.shape
    return (group_quant(x.reshape(-1, sh[-1]), 127, -127).reshape(sh),)


def run(model_dir, plist, kind, scope):
    m = MG.load(model_dir)
    hooks = []
    with torch.no_grad():
        for n, mod in m.named_modules():
            if not isinstance(mod, torch.nn.Linear):
                continue
            leaf = n.split(".")[-1]
            extra = {"all": EXTRA, "selective": (), "selective+lm_head": ("lm_head",),
                     "selective+in_proj_a/b": ("in_proj_a", "in_proj_b")}[scope]
            if leaf in SELECTIVE or leaf in extra:
                mod.weight.copy_(quantize(n, mod.weight.float(), kind))
                if kind == "q8a":
                    hooks.append(mod.register_forward_pre_hook(act_hook))
    out = [T.full_logits(m, p["ids"]) for p in plist]
    for h in hooks:
        h.remove()
    return out


def main():
    root = T.repo_root()
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default=os.path.join(root, "tests", "data", "models", "tiny-trained-bf16"))
    ap.add_argument("--golden")
    a = ap.parse_args()
    gdir = a.golden or os.path.join(root, "tests", "data", "golden", os.path.basename(a.model.rstrip("/")))
    with open(os.path.join(gdir, "manifest.json")) as f:
        man = json.load(f)
    plist = [{"name": p["name"], "ids": p["ids"]} for p in man["prompts"] + man.get("quality_prompts", [])]
    ref = [T.full_logits(MG.load(a.model), p["ids"]) for p in plist]
    lp_ref = torch.cat([torch.log_softmax(r.double(), -1) for r in ref])
    print("reference mean top-1 probability %.4f over %d positions"
          % (float(lp_ref.exp().max(-1).values.mean()), lp_ref.shape[0]))
    print("| %-30s | mean KL   | max KL    | top-1  |" % "weights")
    for scope in ("all", "selective", "selective+lm_head", "selective+in_proj_a/b"):
        for kind in (("fp8", "q8", "q8a", "q4") if scope in ("all", "selective") else ("fp8", "q8a")):
            got = run(a.model, plist, kind, scope)
            lp = torch.cat([torch.log_softmax(g.double(), -1) for g in got])
            kl = (lp_ref.exp() * (lp_ref - lp)).sum(-1).clamp_min(0)
            top1 = float((lp_ref.argmax(-1) == lp.argmax(-1)).double().mean())
            print("| %-30s | %9.3g | %9.3g | %6.4f |" % ("%s (%s)" % (kind, scope), float(kl.mean()),
                                                     float(kl.max()), top1))


if __name__ == "__main__":
    main()
