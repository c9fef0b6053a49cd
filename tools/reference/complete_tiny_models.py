#!/usr/bin/env python3
"""Makes every tiny fixture model directory complete like a real checkpoint:
copies the tiny tokenizer (tests/data/tokenizers/tiny) and the official Qwen3.6
chat template into it, and points bos/eos/pad at the tiny tokenizer's ids
(<|endoftext|> and <|im_end|>, in the same roles as 248044/248046 in the real
model). Token ids of the goldens are unaffected; run after make_tiny_models.py.
Standard library only."""
import json, pathlib, shutil

root = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data"
tok_dir = root / "tokenizers" / "tiny"
template = root / "chat" / "templates" / "qwen3_6.jinja"
tok = json.loads((tok_dir / "tokenizer.json").read_text())
ids = {a["content"]: a["id"] for a in tok["added_tokens"]}
eot, im_end = ids["<|endoftext|>"], ids["<|im_end|>"]

def dump(path, obj):
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")

for d in sorted((root / "models").glob("tiny-*")):
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(tok_dir / f, d / f)
    shutil.copyfile(template, d / "chat_template.jinja")
    cfg = json.loads((d / "config.json").read_text())
    for c in (cfg, cfg.get("text_config")):
        if c is None:
            continue
        for k in ("bos_token_id", "eos_token_id"):
            if k in c:
                c[k] = eot
        if "pad_token_id" in c and c["pad_token_id"] is not None:
            c["pad_token_id"] = eot
    dump(d / "config.json", cfg)
    gen = json.loads((d / "generation_config.json").read_text())
    gen.update(bos_token_id=eot, eos_token_id=[im_end, eot], pad_token_id=eot)
    dump(d / "generation_config.json", gen)
    print("completed", d.name)
