"""Shared pieces of the fixture generators: tiny-model configs, our own seeded
weight init, bf16 rounding, prompts and greedy decoding.

Everything numeric that ends up in tests/data is produced through here, so the
generators (make_tiny_models.py, make_golden.py) cannot drift apart. Single
threaded by design: fixtures must be reproducible bit for bit.
"""
import json
import math
import os

import numpy as np
import torch

import transformers
from transformers import (
    Qwen3_5Config,
    Qwen3_5ForCausalLM,
    Qwen3_5ForConditionalGeneration,
    Qwen3_5TextConfig,
)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

VOCAB = 512
PROMPT_SEED = 20240531
PROMPT_LENS = [1, 2, 63, 64, 65, 127, 128, 129, 700]
ALL_POSITIONS = {"len65", "len129"}
GREEDY_PROMPTS = ["len2", "len63", "len129"]
GREEDY_N = 32

# Special ids of the tiny vocabulary (the tokenizer fixtures must agree).
BOS_ID = 510          # plays <|endoftext|> (real: 248044)
EOS_IDS = [511, 510]  # <|im_end|>, <|endoftext|> (real: [248046, 248044])

# Seeds chosen by `make_tiny_models.py --search` (see README.md).
DEFAULT_SEEDS = {"text": 43, "mm": 2}

LM_HEAD_STD = 0.9  # untied lm_head (tiny-mm)

LAYER_TYPES = (["linear_attention"] * 3 + ["full_attention"]) * 2

MODEL_NAMES = ["tiny-text", "tiny-text-bf16", "tiny-mm", "tiny-mm-bf16"]


def versions():
    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
    }


def reference_string():
    return ("HF transformers %s, torch %s, fp32 compute (bf16 variants: bf16 weights "
            "upcast to fp32), eager attention" % (transformers.__version__, torch.__version__))


def text_fields(kind):
    """Text-model dimensions shared by both layouts (fixtures.md)."""
    d = dict(
        vocab_size=VOCAB, hidden_size=48, intermediate_size=96, num_hidden_layers=8,
        layer_types=list(LAYER_TYPES), head_dim=32,
        linear_num_key_heads=2, linear_num_value_heads=6,
        linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
        rms_norm_eps=1e-6, hidden_act="silu", max_position_embeddings=4096,
        bos_token_id=BOS_ID, eos_token_id=BOS_ID, pad_token_id=None,
    )
    if kind == "text":
        d.update(num_attention_heads=6, num_key_value_heads=2, tie_word_embeddings=True)
    else:
        d.update(num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    return d


def make_config(kind):
    if kind == "text":
        # Legacy flat form: rope_theta / partial_rotary_factor at the top level.
        c = Qwen3_5TextConfig(**text_fields("text"), rope_theta=1000000.0,
                              partial_rotary_factor=0.25)
        c.architectures = ["Qwen3_5ForCausalLM"]
    else:
        tf = text_fields("mm")
        tf["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000000.0,
                                 "partial_rotary_factor": 0.25,
                                 "mrope_section": [2, 1, 1], "mrope_interleaved": True}
        vision = dict(depth=1, hidden_size=16, num_heads=2, intermediate_size=32,
                      in_channels=3, patch_size=2, temporal_patch_size=2,
                      spatial_merge_size=2, out_hidden_size=48,
                      num_position_embeddings=16, hidden_act="gelu_pytorch_tanh")
        c = Qwen3_5Config(text_config=tf, vision_config=vision, tie_word_embeddings=False)
        c.architectures = ["Qwen3_5ForConditionalGeneration"]
    c._attn_implementation = "eager"
    return c


def build_model(kind, seed):
    """In-memory HF model with our seeded init (fp32)."""
    cfg = make_config(kind)
    torch.manual_seed(seed)
    cls = Qwen3_5ForCausalLM if kind == "text" else Qwen3_5ForConditionalGeneration
    model = cls._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    init_weights(model, seed)
    model.eval()
    return model


def _normal(g, shape, std, mean=0.0):
    return torch.randn(shape, generator=g, dtype=torch.float32) * std + mean


def _uniform(g, shape, lo, hi):
    return torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo


def init_weights(model, seed):
    """Own init, chosen so every convention is exercised:
    zero-centred norms get w ~ N(0, 0.25) (scale 1+w), the plain GDN norm
    gets U(0.5, 1.5), A_log = log U(0.05, 4) (some heads remember long, some
    forget fast), dt_bias ~ N(0, 1), conv taps ~ N(0, 0.5); linears are
    N(0, 1/fan_in); the output embedding is scaled so logits spread by a few units."""
    g = torch.Generator().manual_seed(seed * 1000003 + 7)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            shape = tuple(p.shape)
            if name.endswith("A_log"):
                v = torch.log(_uniform(g, shape, 0.05, 4.0))
            elif name.endswith("dt_bias"):
                v = _normal(g, shape, 1.0)
            elif name.endswith("linear_attn.norm.weight"):
                v = _uniform(g, shape, 0.5, 1.5)
            elif "conv1d.weight" in name and "visual" not in name:
                v = _normal(g, shape, 0.5)
            elif name.endswith("norm.weight") or name.endswith("norm1.weight") \
                    or name.endswith("norm2.weight"):
                if "visual" in name:
                    v = _normal(g, shape, 0.1, 1.0)  # plain LayerNorm in the vision tower
                else:
                    v = _normal(g, shape, 0.25)
            elif name.endswith(".bias"):
                v = _normal(g, shape, 0.02)
            elif name.endswith("embed_tokens.weight"):
                v = _normal(g, shape, 0.6)
            elif name == "lm_head.weight":
                # untied (tiny-mm only): a wider logit spread makes greedy steps
                # with comfortable top-1/top-2 gaps less rare
                v = _normal(g, shape, LM_HEAD_STD)
            elif p.dim() >= 2:
                fan_in = int(np.prod(shape[1:]))
                v = _normal(g, shape, 1.0 / math.sqrt(fan_in))
            else:
                v = _normal(g, shape, 0.1)
            p.copy_(v)
    if getattr(model.config, "tie_word_embeddings", False) or \
            getattr(getattr(model.config, "text_config", None), "tie_word_embeddings", False):
        model.tie_weights()


def keep_f32(name):
    """Tensors real Qwen3.5 checkpoints store in F32 inside a BF16 file."""
    return name.endswith("linear_attn.A_log") or name.endswith("linear_attn.norm.weight")


def round_bf16_(model):
    """In place: every parameter rounded to bf16 (RNE) except keep_f32 ones."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not keep_f32(name):
                p.copy_(p.to(torch.bfloat16).to(torch.float32))


def prompts():
    """Prompt ids: one fixed-seed draw per length, uniform over [0, VOCAB)."""
    rng = np.random.default_rng(PROMPT_SEED)
    out = []
    for n in PROMPT_LENS:
        name = "len%d" % n
        ids = [int(x) for x in rng.integers(0, VOCAB, size=n)]
        out.append({"name": name, "ids": ids,
                    "positions": "all" if name in ALL_POSITIONS else "last"})
    return out


@torch.no_grad()
def full_logits(model, ids):
    """Logits [T, V] of one full forward pass (no cache), fp32."""
    x = torch.tensor([ids], dtype=torch.long)
    return model(input_ids=x, use_cache=False).logits[0].float()


def top2_gap(row):
    t = torch.topk(row, 2)
    return int(t.indices[0]), float(t.values[0] - t.values[1])


@torch.no_grad()
def greedy_manual(model, ids, n):
    """Argmax loop over full forward passes (the slow, obviously right way)."""
    seq = list(ids)
    toks, gaps = [], []
    for _ in range(n):
        tok, gap = top2_gap(full_logits(model, seq)[-1])
        toks.append(tok)
        gaps.append(gap)
        seq.append(tok)
    return toks, gaps


@torch.no_grad()
def greedy_generate(model, ids, n):
    """HF generate, greedy, exactly n new tokens; returns tokens and raw-logit gaps."""
    x = torch.tensor([ids], dtype=torch.long)
    out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                         max_new_tokens=n, min_new_tokens=n, eos_token_id=None,
                         pad_token_id=BOS_ID, output_logits=True,
                         return_dict_in_generate=True, temperature=None, top_p=None,
                         top_k=None)
    toks = [int(t) for t in out.sequences[0, len(ids):]]
    gaps = [top2_gap(l[0].float())[1] for l in out.logits]
    return toks, gaps


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def stats(model, ids):
    """Quick health numbers: logit std and mean pairwise cosine of final hidden states."""
    with torch.no_grad():
        x = torch.tensor([ids], dtype=torch.long)
        out = model(input_ids=x, use_cache=False, output_hidden_states=True)
        lg = out.logits[0]
        h = out.hidden_states[-1][0]
        hn = torch.nn.functional.normalize(h, dim=-1)
        cos = (hn @ hn.T).mean().item()
        return {"logit_std": lg.std().item(), "logit_range": (lg.max() - lg.min()).item(),
                "mean_cos_final_hidden": cos,
                "hidden_rms": [float(t[0].pow(2).mean().sqrt()) for t in out.hidden_states]}


def repo_root():
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
