#!/usr/bin/env python3
"""Writes tests/data/golden/<model>/ (manifest.json + <prompt>.f32) from the
tiny checkpoints in tests/data/models, with HF transformers in fp32.

  make_golden.py [--models tests/data/models] [--out tests/data/golden] [--only tiny-text,...]

Each model directory is loaded the way a user would load it (from_pretrained,
dtype=float32, eager attention; bf16 files are upcast), so the goldens test the
checkpoint files, not our in-memory objects. Greedy continuations come from
HF generate (cached decode) and must equal an argmax loop over full forward
passes; the recorded gaps are those of the full forward passes.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinylib as T  # noqa: E402

MIN_GAP_REQUIRED = 1e-2


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
            "prompt_seed": T.PROMPT_SEED,
            "versions": T.versions(),
        },
        "prompts": [],
        "greedy": [],
    }
    for p in plist:
        lg = T.full_logits(m, p["ids"])
        rows = lg if p["positions"] == "all" else lg[-1:]
        fn = p["name"] + ".f32"
        shape = write_f32(os.path.join(out_dir, fn), rows)
        man["prompts"].append({"name": p["name"], "ids": p["ids"], "logits": fn,
                               "positions": p["positions"], "n_positions": int(shape[0]),
                               "absmax": float(rows.abs().max())})
    overall = float("inf")
    for pn in T.GREEDY_PROMPTS:
        ids = byname[pn]
        gen_toks, gen_gaps = T.greedy_generate(m, ids, T.GREEDY_N)
        man_toks, man_gaps = T.greedy_manual(m, ids, T.GREEDY_N)
        if gen_toks != man_toks:
            raise SystemExit("%s/%s: generate %s != manual argmax %s" % (name, pn, gen_toks, man_toks))
        mg = min(man_gaps)
        overall = min(overall, mg, min(gen_gaps))
        if mg <= MIN_GAP_REQUIRED or min(gen_gaps) <= MIN_GAP_REQUIRED:
            raise SystemExit("%s/%s: min gap %g too small: choose another seed" % (name, pn, mg))
        if any(t in T.EOS_IDS for t in man_toks):
            raise SystemExit("%s/%s: continuation hits an EOS id" % (name, pn))
        man["greedy"].append({"prompt": pn, "n": T.GREEDY_N, "tokens": man_toks,
                              "gaps": [round(g, 6) for g in man_gaps],
                              "min_gap": round(mg, 6)})
    T.write_json(os.path.join(out_dir, "manifest.json"), man)
    print("%s: %d prompts, greedy min gap %.4f" % (name, len(plist), overall))


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
