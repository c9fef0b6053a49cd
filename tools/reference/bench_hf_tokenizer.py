#!/usr/bin/env python3
"""Single-threaded HF tokenizers throughput on the same corpus and tokenizer as
bench/bench_tokenizer.c (encode per line, whole file, decode). Pinned: tokenizers 0.23.3.
usage: bench_hf_tokenizer.py [TOKENIZER_JSON_OR_ZST [CORPUS]]"""
import os
import pathlib
import subprocess
import sys
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
from tokenizers import Tokenizer  # noqa: E402

root = pathlib.Path(__file__).resolve().parents[2]
tj = sys.argv[1] if len(sys.argv) > 1 else str(root / "tests/data/tokenizers/qwen3.6/tokenizer.json.zst")
corpus = sys.argv[2] if len(sys.argv) > 2 else str(root / "tests/data/tokenizer/corpus.txt")
js = subprocess.run(["zstd", "-dc", tj], check=True, capture_output=True).stdout if tj.endswith(".zst") else open(tj, "rb").read()
t0 = time.perf_counter()
tok = Tokenizer.from_str(js.decode("utf-8"))
t_load = time.perf_counter() - t0
raw = open(corpus, "rb").read()
lines = raw.decode("utf-8").split("\n")[:-1]
mb = len(raw) / 1e6


def per_line():
    s = time.perf_counter()
    n = 0
    for l in lines:
        n += len(tok.encode(l, add_special_tokens=False).ids)
    return time.perf_counter() - s, n


cold, nid = per_line()
warm = min(per_line()[0] for _ in range(3))
text = raw.decode("utf-8")
whole = min((lambda s: (tok.encode(text, add_special_tokens=False), time.perf_counter() - s)[1])(time.perf_counter()) for _ in range(3))
ids = tok.encode(text, add_special_tokens=False).ids
dec = min((lambda s: (tok.decode(ids, skip_special_tokens=False), time.perf_counter() - s)[1])(time.perf_counter()) for _ in range(3))
print(f"HF tokenizers {__import__('tokenizers').__version__}: corpus {mb:.2f} MB, {len(lines)} lines, {nid} ids, single thread")
print(f"{'load tokenizer.json':34s} {t_load:8.3f} s")
print(f"{'encode per line, cold cache':34s} {mb / cold:8.2f} MB/s")
print(f"{'encode per line, warm cache':34s} {mb / warm:8.2f} MB/s")
print(f"{'encode whole file as one text':34s} {mb / whole:8.2f} MB/s")
print(f"{'decode':34s} {mb / dec:8.2f} MB/s (of text)")
