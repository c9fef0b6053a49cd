#!/usr/bin/env python3
"""Writes tests/data/golden/<model>/ (manifest.json + <prompt>.f32) from the
tiny checkpoints in tests/data/models, with HF transformers in fp32.

  make_golden.py [--models tests/data/models] [--out tests/data/golden] [--only tiny-text,...]

Each model directory is loaded the way a user would load it (from_pretrained,
dtype=float32, eager attention; bf16 files are upcast), so the goldens test the
checkpoint files, not our in-memory objects. Greedy continuations come from
HF generate (cached decode) and must equal an argmax loop over full forward
passes; the recorded gaps are those of the full forward passes.

Every criterion of tinylib is enforced again here on the written checkpoints
(a fixture that does not meet them is not written): max|HF fp32 - HF fp64| <=
MAX_FP64_DIFF for every prompt over ALL positions (the fp64 run holds exactly the
same, for bf16 variants bf16-rounded, weight values and runs every op in double),
HF fp32 fed len129 in pieces through its cache (1+62+66, 64+64+1, 100+29, token by
token) within MAX_SPLIT_DIFF of one call, logit std >= MIN_LOGIT_STD, greedy gaps
>= MIN_GAP, no EOS id and no short loop (MIN_DISTINCT). The numbers go into the
manifest.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinylib as T  # noqa: E402


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        arch = json.load(f)["architectures"][0]
    cls = {"Qwen3_5ForCausalLM": T.Qwen3_5ForCausalLM,
           "Qwen3_5ForConditionalGeneration": T.Qwen3_5ForConditionalGeneration}[arch]
    m = cls.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    m.eval()
    for n, p in m.named_parameters():
        assert p.dtype == torch.float32, n
    return m


def write_f32(path, rows):
    arr = np.ascontiguousarray(rows.detach().cpu().numpy().astype("<f4"))
    arr.tofile(path)
    return arr.shape


def golden(name, model_dir, out_dir):
    m = load(model_dir)
    os.makedirs(out_dir, exist_ok=True)
    kind = "text" if name.startswith("tiny-text") else "mm"
    seed = T.DEFAULT_SEEDS[kind]
    plist = T.prompts()
    byname = {p["name"]: p["ids"] for p in plist}
    man = {
        "model": name,
        "vocab_size": T.VOCAB,
        "reference": T.reference_string(),
        "generator": {
            "commands": ["tools/reference/make_tiny_models.py --seed-%s %d" % (kind, seed),
                         "tools/reference/make_golden.py"],
            "weight_seed": seed,
            "init": {k: (list(v) if isinstance(v, tuple) else v) for k, v in T.INIT.items()},
            "prompt_seed": T.PROMPT_SEED,
            "versions": T.versions(),
        },
        "prompts": [],
        "greedy": [],
    }
    d64 = T.fp64_diffs(m, plist)
    for p in plist:
        lg = T.full_logits(m, p["ids"])
        rows = lg if p["positions"] == "all" else lg[-1:]
        d_all, d_stored, std = d64[p["name"]]
        if d_all > T.MAX_FP64_DIFF or std < T.MIN_LOGIT_STD:
            raise SystemExit("%s/%s: HF fp32 vs fp64 %.3g (max %g), logit std %.3g (min %g): "
                             "ill-conditioned, choose another seed/init"
                             % (name, p["name"], d_all, T.MAX_FP64_DIFF, std, T.MIN_LOGIT_STD))
        fn = p["name"] + ".f32"
        shape = write_f32(os.path.join(out_dir, fn), rows)
        man["prompts"].append({"name": p["name"], "ids": p["ids"], "logits": fn,
                               "positions": p["positions"], "n_positions": int(shape[0]),
                               "absmax": float(rows.abs().max()),
                               "logit_std": round(std, 4),
                               "fp64_max_abs_diff": float("%.3g" % d_stored),
                               "fp64_max_abs_diff_all_positions": float("%.3g" % d_all)})
    sp = T.split_diffs(m, byname["len129"])
    if max(sp.values()) > T.MAX_SPLIT_DIFF:
        raise SystemExit("%s: HF split/incremental vs one call %s > %g" % (name, sp, T.MAX_SPLIT_DIFF))
    eff = T.sublayer_effects(m, byname["len129"])
    if min(eff.values()) < T.MIN_SUBLAYER_EFFECT:
        raise SystemExit("%s: a sub-block barely moves the logits: %s" % (name, eff))
    man["conditioning"] = {
        "fp64_reference": "HF run in float64 on the same weight values (every op in double, "
                          "rotary inverse frequencies recomputed in double)",
        "fp64_max_abs_diff": float("%.3g" % max(v[0] for v in d64.values())),
        "hf_split_max_abs_diff_len129": {k: float("%.3g" % v) for k, v in sp.items()},
        "sublayer_effect_len129": {k: round(v, 4) for k, v in eff.items()},
        "criteria": {"max_fp64_diff": T.MAX_FP64_DIFF, "max_split_diff": T.MAX_SPLIT_DIFF,
                     "min_gap": T.MIN_GAP, "min_distinct_greedy_tokens": T.MIN_DISTINCT,
                     "min_logit_std": T.MIN_LOGIT_STD,
                     "min_sublayer_effect": T.MIN_SUBLAYER_EFFECT},
    }
    overall = float("inf")
    for pn in T.GREEDY_PROMPTS:
        ids = byname[pn]
        gen_toks, gen_gaps = T.greedy_generate(m, ids, T.GREEDY_N)
        man_toks, man_gaps = T.greedy_manual(m, ids, T.GREEDY_N)
        if gen_toks != man_toks:
            raise SystemExit("%s/%s: generate %s != manual argmax %s" % (name, pn, gen_toks, man_toks))
        mg = min(man_gaps)
        overall = min(overall, mg, min(gen_gaps))
        if mg < T.MIN_GAP or min(gen_gaps) < T.MIN_GAP:
            raise SystemExit("%s/%s: min gap %g too small: choose another seed" % (name, pn, mg))
        if any(t in T.EOS_IDS for t in man_toks):
            raise SystemExit("%s/%s: continuation hits an EOS id" % (name, pn))
        if len(set(man_toks)) < T.MIN_DISTINCT:
            raise SystemExit("%s/%s: continuation is a short loop %s" % (name, pn, man_toks))
        man["greedy"].append({"prompt": pn, "n": T.GREEDY_N, "tokens": man_toks,
                              "gaps": [round(g, 6) for g in man_gaps],
                              "min_gap": round(mg, 6)})
    T.write_json(os.path.join(out_dir, "manifest.json"), man)
    print("%s: %d prompts, greedy min gap %.4f, HF fp32 vs fp64 %.3g, HF splits %.3g"
          % (name, len(plist), overall, man["conditioning"]["fp64_max_abs_diff"], max(sp.values())))


def main():
    root = T.repo_root()
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=os.path.join(root, "tests", "data", "models"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "golden"))
    ap.add_argument("--only", default=",".join(T.MODEL_NAMES))
    a = ap.parse_args()
    for name in a.only.split(","):
        golden(name, os.path.join(a.models, name), os.path.join(a.out, name))


if __name__ == "__main__":
    main()
