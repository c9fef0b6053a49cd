"""Shared pieces of the fixture generators: tiny-model configs, our own seeded
weight init, bf16 rounding, prompts and greedy decoding.

Everything numeric that ends up in tests/data is produced through here, so the
generators (make_tiny_models.py, make_golden.py) cannot drift apart. Single
threaded by design: fixtures must be reproducible bit for bit.
"""
import contextlib
import copy
import json
import math
import os

import numpy as np
import torch

import transformers
from torch.overrides import TorchFunctionMode
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

# Special ids of the tiny tokenizer (tests/data/tokenizers/tiny; complete_tiny_models.py
# writes the same ids into the model directories).
BOS_ID = 440          # <|endoftext|> (real: 248044)
EOS_IDS = [442, 440]  # <|im_end|>, <|endoftext|> (real: [248046, 248044])

# Seeds chosen by `make_tiny_models.py --search` (see README.md).
DEFAULT_SEEDS = {"text": 15, "mm": 450}

# Acceptance criteria of a fixture model (checked by make_tiny_models.py --search and
# enforced again by make_golden.py on the written checkpoints, fp32 and bf16 variants).
MAX_FP64_DIFF = 1e-5    # max|HF fp32 - HF fp64| over every prompt and position
MAX_SPLIT_DIFF = 1e-5   # HF fp32 one call vs the same prompt through HF's cache in pieces
MIN_GAP = 2e-2          # top-1/top-2 logit gap at every greedy step
MIN_DISTINCT = 8        # distinct tokens in each 32-token greedy continuation (no short loop)
MIN_LOGIT_STD = 1.0     # logits spread by a few units
MIN_SUBLAYER_EFFECT = 0.05  # every mixer / MLP moves the logits (mean |d| when zeroed, len129)

# Weight init knobs (init_weights). OLD = the first fixture generation (ill-conditioned).
INIT_OLD = dict(emb_std=0.6, lm_head_std=0.9, norm_std=0.25, gnorm_range=(0.5, 1.5),
                a_range=(0.05, 4.0), dt_mean=0.0, dt_std=1.0, conv_std=0.5,
                lin_gain=1.0, gdn_out_gain=1.0, attn_out_gain=1.0, mlp_out_gain=1.0,
                a_gain=1.0, b_gain=1.0, qk_corr=0.0, final_norm_mean=0.0, final_norm_std=0.25,
                mlp0_out_gain=1.0)
# Current init: well conditioned (fp32 rounding is not amplified with depth) yet
# every convention is exercised. Why each value (numbers: README.md):
#  * residual branches are small next to the residual stream: out-projection gains
#    (times 1/sqrt(fan_in)) GDN 0.12, attention 0.4, MLP 0.17, embeddings std 0.5. The
#    old gain-1 branches multiplied a rounding error made in layer 0 by ~100 on the
#    way to the logits; now an error is carried, not amplified. Every mixer / MLP
#    still moves the logits (mean |d| when zeroed >= MIN_SUBLAYER_EFFECT);
#  * layer 0's MLP is the exception (gain 2.0): it maps the exact embedding to a
#    residual that is mostly not the embedding. With tied embeddings and a residual
#    dominated by e_t the next token is a symmetric function e_j.D.e_t of the current
#    one and greedy falls into 1- and 2-cycles at once; early in the network its
#    errors are plain rounding of exact inputs;
#  * the final (1+w) norm has w ~ N(-1, 0.35), 1+w centred on 0 (same reason: no
#    built-in bonus for repeating the current token); its spread sets the logit scale
#    (std ~1.2) and with it the absolute size of fp32 noise;
#  * GDN: A = U(0.02, 0.5), dt_bias ~ N(-1.5, 0.7): per-step decays exp(g) spread
#    from ~0.5 (forgets within a few tokens) to ~0.9996 (remembers the whole prompt)
#    without the huge in-chunk cumulative decays of the old init (|g| up to ~12 per
#    step), whose fp32 exp(cumsum_i - cumsum_j) lost ~4 digits; the query half of
#    in_proj_qkv and of the conv taps is correlated 0.7 with the key half, so q.k
#    stays away from 0 and no GDN output row is a tiny difference of large terms
#    (the gated RMSNorm normalises each row and would magnify that row's noise);
#  * beta = sigmoid(N(0,1)) spreads over (0.1, 0.9); conv taps N(0, 0.5); (1+w)
#    norms w ~ N(0, 0.25); plain GDN norm U(0.5, 1.5); untied lm_head (tiny-mm) std
#    0.58, about the logit spread of the tied 0.5 embeddings.
INIT = dict(INIT_OLD, emb_std=0.5, lm_head_std=0.58, final_norm_mean=-1.0, final_norm_std=0.35,
            a_range=(0.02, 0.5), dt_mean=-1.5, dt_std=0.7, qk_corr=0.7,
            gdn_out_gain=0.12, attn_out_gain=0.4, mlp_out_gain=0.17, mlp0_out_gain=2.0)

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


def build_model(kind, seed, init=None):
    """In-memory HF model with our seeded init (fp32)."""
    cfg = make_config(kind)
    torch.manual_seed(seed)
    cls = Qwen3_5ForCausalLM if kind == "text" else Qwen3_5ForConditionalGeneration
    model = cls._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    init_weights(model, seed, init)
    model.eval()
    return model


def _normal(g, shape, std, mean=0.0):
    return torch.randn(shape, generator=g, dtype=torch.float32) * std + mean


def _uniform(g, shape, lo, hi):
    return torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo


def init_weights(model, seed, init=None):
    """Own init (see INIT for the knobs and why)."""
    c = dict(INIT, **(init or {}))
    g = torch.Generator().manual_seed(seed * 1000003 + 7)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            shape = tuple(p.shape)
            if name.endswith("A_log"):
                v = torch.log(_uniform(g, shape, *c["a_range"]))
            elif name.endswith("dt_bias"):
                v = _normal(g, shape, c["dt_std"], c["dt_mean"])
            elif name.endswith("linear_attn.norm.weight"):
                v = _uniform(g, shape, *c["gnorm_range"])
            elif "conv1d.weight" in name and "visual" not in name:
                v = _normal(g, shape, c["conv_std"])
            elif name.endswith("norm.weight") or name.endswith("norm1.weight") \
                    or name.endswith("norm2.weight"):
                if "visual" in name:
                    v = _normal(g, shape, 0.1, 1.0)  # plain LayerNorm in the vision tower
                elif name.endswith("model.norm.weight") or name.endswith("language_model.norm.weight"):
                    v = _normal(g, shape, c["final_norm_std"], c["final_norm_mean"])
                else:
                    v = _normal(g, shape, c["norm_std"])
            elif name.endswith(".bias"):
                v = _normal(g, shape, 0.02)
            elif name.endswith("embed_tokens.weight"):
                v = _normal(g, shape, c["emb_std"])
            elif name == "lm_head.weight":
                v = _normal(g, shape, c["lm_head_std"])
            elif p.dim() >= 2:
                fan_in = int(np.prod(shape[1:]))
                gain = c["lin_gain"]
                if "visual" in name:
                    pass
                elif name.endswith("linear_attn.out_proj.weight"):
                    gain = c["gdn_out_gain"]
                elif name.endswith("self_attn.o_proj.weight"):
                    gain = c["attn_out_gain"]
                elif name.endswith("layers.0.mlp.down_proj.weight"):
                    gain = c["mlp0_out_gain"]
                elif name.endswith("mlp.down_proj.weight"):
                    gain = c["mlp_out_gain"]
                elif name.endswith("in_proj_a.weight"):
                    gain = c["a_gain"]
                elif name.endswith("in_proj_b.weight"):
                    gain = c["b_gain"]
                v = _normal(g, shape, gain / math.sqrt(fan_in))
            else:
                v = _normal(g, shape, 0.1)
            if c["qk_corr"] and (name.endswith("in_proj_qkv.weight") or
                                 ("conv1d.weight" in name and "visual" not in name)):
                # query rows/taps share a part with the key rows/taps: q.k of the
                # l2-normalised vectors stays away from 0, so no GDN output row is a
                # tiny difference of large terms (the gated norm would magnify its noise)
                kd = model_kd(model)
                a = c["qk_corr"]
                v = v.clone()
                v[:kd] = a * v[kd:2 * kd] + math.sqrt(1.0 - a * a) * v[:kd]
            p.copy_(v)
    if getattr(model.config, "tie_word_embeddings", False) or \
            getattr(getattr(model.config, "text_config", None), "tie_word_embeddings", False):
        model.tie_weights()


def model_kd(model):
    tc = getattr(model.config, "text_config", model.config)
    return tc.linear_num_key_heads * tc.linear_key_head_dim


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


@torch.no_grad()
def split_logits(model, ids, sizes):
    """Logits [T, V] of ids fed in consecutive calls of the given sizes through HF's
    own cache (chunked GDN with carried state for size > 1, the recurrent kernel
    for size 1), fp32. sizes must sum to len(ids)."""
    assert sum(sizes) == len(ids)
    cache, rows, done = None, [], 0
    for n in sizes:
        x = torch.tensor([ids[done:done + n]], dtype=torch.long)
        kw = {"cache": cache} if cache is not None else {}
        out = model(input_ids=x, use_cache=True, attention_mask=torch.ones(1, done + n, dtype=torch.long), **kw)
        cache = out.cache
        rows.append(out.logits[0].float())
        done += n
    return torch.cat(rows, 0)


SPLITS = {"1+62+66": [1, 62, 66], "64+64+1": [64, 64, 1], "100+29": [100, 29]}


@torch.no_grad()
def split_diffs(model, ids):
    """max|one call - split| for the SPLITS (last piece stretched to len(ids)) and
    token by token, all positions."""
    base = full_logits(model, ids)
    out = {}
    for name, sp in SPLITS.items():
        sp = list(sp)
        sp[-1] += len(ids) - sum(sp)
        out[name] = float((split_logits(model, ids, sp) - base).abs().max())
    out["token_by_token"] = float((split_logits(model, ids, [1] * len(ids)) - base).abs().max())
    return out


@torch.no_grad()
def fp64_diffs(model, plist, model64=None):
    """Per prompt: (max|HF fp32 - HF fp64| over all positions, same over the positions
    a golden stores, std of the fp64 logits)."""
    m64 = model64 if model64 is not None else to_f64(model)
    out = {}
    for p in plist:
        a = full_logits(model, p["ids"]).double()
        b = f64_logits(m64, p["ids"])
        d = (a - b).abs()
        stored = d if p["positions"] == "all" else d[-1:]
        out[p["name"]] = (float(d.max()), float(stored.max()), float(b.std()))
    return out


@torch.no_grad()
def sublayer_effects(model, ids):
    """For every decoder layer's mixer (linear_attn / self_attn) and MLP: mean |d logits|
    when its output is replaced by zeros. Shows every sub-block matters."""
    text = model.model.language_model if hasattr(model.model, "language_model") else model.model
    base = full_logits(model, ids)
    out = {}

    def zero(_m, _i, o):
        return (o[0] * 0,) + tuple(o[1:]) if isinstance(o, tuple) else o * 0

    for i, layer in enumerate(text.layers):
        for nm in ("linear_attn" if hasattr(layer, "linear_attn") else "self_attn", "mlp"):
            h = getattr(layer, nm).register_forward_hook(zero)
            try:
                out["%d.%s" % (i, nm)] = float((full_logits(model, ids) - base).abs().mean())
            finally:
                h.remove()
    return out


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
    """HF generate, greedy, exactly n new tokens; returns tokens and raw-logit gaps.
    eos_token_id=None + min_new_tokens=n only make generate run all n steps; the
    generators reject any continuation containing an EOS id (EOS_IDS), so with the
    real eos ids generate would have produced the same n tokens."""
    x = torch.tensor([ids], dtype=torch.long)
    out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                         max_new_tokens=n, min_new_tokens=n, eos_token_id=None,
                         pad_token_id=BOS_ID, output_logits=True,
                         return_dict_in_generate=True, temperature=None, top_p=None,
                         top_k=None)
    toks = [int(t) for t in out.sequences[0, len(ids):]]
    gaps = [top2_gap(l[0].float())[1] for l in out.logits]
    return toks, gaps


class _F64Mode(TorchFunctionMode):
    """Runs HF's code in float64 for real: HF casts to float32 in several places
    (RMSNorm x.float(), the gated norm, the GDN kernels, softmax dtype=float32,
    rotary cos/sin, A_log.float()). Inside this mode every float32 request
    (Tensor.float(), dtype=torch.float32 arguments) becomes float64, and any
    float32 tensor that still comes out of an op is counted so the caller can
    refuse a reference that is not fully double."""

    def __init__(self):
        super().__init__()
        self.f32_outputs = 0
        self.active = True  # False: pass ops through untouched (conditioning.py)

    @staticmethod
    def _map(v):
        if v is torch.float32:
            return torch.float64
        if isinstance(v, (list, tuple)) and any(x is torch.float32 for x in v):
            return type(v)(torch.float64 if x is torch.float32 else x for x in v)
        return v

    def _count(self, out):
        if isinstance(out, torch.Tensor):
            self.f32_outputs += int(out.dtype in (torch.float32, torch.bfloat16, torch.float16))
        elif isinstance(out, (list, tuple)):
            for o in out:
                self._count(o)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not self.active:
            return func(*args, **(kwargs or {}))
        kwargs = {k: self._map(v) for k, v in (kwargs or {}).items()}
        args = tuple(self._map(a) for a in args)
        if func is torch.Tensor.float:
            func = torch.Tensor.double
        out = func(*args, **kwargs)
        self._count(out)
        return out


@contextlib.contextmanager
def _f64_mode():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    mode = _F64Mode()
    try:
        with mode:
            yield mode
    finally:
        torch.set_default_dtype(old)


def to_f64(model):
    """A float64 copy of an (fp32) HF model holding exactly the same weight values,
    rotary inverse frequencies recomputed in double. Run it with f64_logits()."""
    m = copy.deepcopy(model).to(torch.float64)
    with _f64_mode():
        for mod in m.modules():
            if hasattr(mod, "inv_freq") and hasattr(mod, "compute_default_rope_parameters") \
                    and getattr(mod, "rope_type", "default") == "default" and hasattr(mod, "mrope_section"):
                inv, _ = mod.compute_default_rope_parameters(mod.config)
                mod.inv_freq = inv.to(torch.float64)
                mod.original_inv_freq = inv.to(torch.float64).clone()
    m.eval()
    return m


@torch.no_grad()
def f64_logits(model64, ids):
    """Logits [T, V] (float64) of one full forward pass of a to_f64() model, every op
    in double (raises if HF still produced a float32 tensor anywhere)."""
    x = torch.tensor([ids], dtype=torch.long)
    with _f64_mode() as mode:
        out = model64(input_ids=x, use_cache=False).logits[0]
    if out.dtype != torch.float64 or mode.f32_outputs:
        raise RuntimeError("fp64 reference not fully double (%d float32 outputs)" % mode.f32_outputs)
    return out


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
