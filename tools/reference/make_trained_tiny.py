#!/usr/bin/env python3
"""Builds tests/data/models/tiny-trained-bf16: a small qwen3_5 model TRAINED for a few
minutes on real English text, so that weight quantization can be judged on a model whose
output distributions are confident like a real LM's (the random-weight fixtures are flat:
their reference's mean top-1 probability is 0.05-0.09, so any noise flips top-1).

  make_trained_tiny.py [--steps N] [--seed S] [--out DIR]     # train + write the model
  make_trained_tiny.py --golden-only                          # goldens from the written dir

Architecture: the real qwen3_5 layer pattern [3 Gated DeltaNet + 1 gated attention] x 2,
(1+w) RMSNorms, partial rotary (0.25), GQA (4 q / 2 kv heads), GDN with 2 key heads and 4
value heads (Hv/Hk = 2), untied lm_head, legacy flat text config like tiny-text. HF
transformers' own Qwen3_5ForCausalLM trains it (torch CPU, one thread, deterministic
algorithms, fixed seed, fixed number of steps).

Data: the Debian licence texts under /usr/share/common-licenses (base-files) and the POD
documentation (English prose with code examples, ~3.7 MB) of the Perl core modules under
/usr/share/perl/5.36.0 (perl-modules-5.36), tokenized with the tiny fixture tokenizer (vocab
512, mostly characters and short pieces), documents separated by <|endoftext|>. The licences
alone (130K tokens) were memorised within a few epochs (train loss 0.45, held-out 2.47, top-1
probability 0.69 at 0.47 accuracy: overconfident); with the POD text training sees each
token less than once. HELD_OUT files are never trained on; the golden and quality prompts are
cut from Apache-2.0. The concatenated training text's sha256 goes into the README so
a rerun on another system can tell whether it sees the same data.

The written checkpoint: BF16 safetensors except linear_attn.A_log and linear_attn.norm.weight
(F32, as real Qwen3.5 files), config.json / generation_config.json shaped like the other
fixtures, tokenizer + chat template copied from tiny-text. It is re-loaded with
from_pretrained and must reproduce the bf16-rounded in-memory model's logits exactly.

Goldens (tests/data/golden/tiny-trained-bf16): HF fp32 logits of held-out text prompts
(make_golden.py's format), greedy continuations, fp64 conditioning numbers.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
from safetensors import safe_open
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinylib as T  # noqa: E402  (sets one thread + deterministic algorithms)
import make_tiny_models as MT  # noqa: E402

NAME = "tiny-trained-bf16"
SEED = 1234
STEPS = 600
SEQ = 256
BATCH = 8
LR = 3e-3
WARMUP = 30
LICENSES = "/usr/share/common-licenses"
PERL_POD = "/usr/share/perl/5.36.0"  # Debian perl-modules-5.36: the POD of every .pm / .pod
HELD_OUT = ["Apache-2.0", "MPL-1.1"]  # never trained on; prompts come from Apache-2.0

DIMS = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=8,
            layer_types=list(T.LAYER_TYPES), head_dim=32,
            num_attention_heads=4, num_key_value_heads=2,
            linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4)

# Held-out prompts: (name, character offset into Apache-2.0, token count, positions).
# Logits of "all" prompts are stored for every position; test_golden.c splits the longest of
# them (>= 129 tokens). test_quant_quality.c uses every position of every prompt either way.
PROMPTS = [("text2", 4250, 2, "last"), ("text64", 5200, 64, "last"),
           ("text129", 1500, 129, "all"), ("text300", 7000, 300, "last"),
           ("text200", 9000, 200, "last")]
GREEDY = ["text2", "text64", "text129"]
# Extra held-out prompts for test_quant_quality.c (ids only in the manifest, no logits: more
# positions for its top-1 statistics without bloating the goldens): (file, char offset, tokens).
QUALITY = ([("Apache-2.0", o, 192) for o in (0, 2500, 6000, 8000, 10000)] +
           [("MPL-1.1", o, 192) for o in range(0, 25000, 2500)])  # 192: runs under ASan too


def tokenizer():
    return Tokenizer.from_file(os.path.join(T.repo_root(), "tests", "data", "models", "tiny-text",
                                            "tokenizer.json"))


def training_files():
    return [f for f in sorted(os.listdir(LICENSES))
            if f not in HELD_OUT and not os.path.islink(os.path.join(LICENSES, f))]


def pod_files():
    out = []
    for d, _, fs in os.walk(PERL_POD):
        out += [os.path.join(d, f) for f in fs if f.endswith((".pm", ".pod"))]
    return sorted(out)


def pod_text(path):
    """The POD blocks of a Perl file (from a '=word' line to '=cut')."""
    out, inpod = [], False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("=cut"):
                inpod = False
            elif line.startswith("=") and line[1:2].isalpha():
                inpod = True
            if inpod:
                out.append(line)
    return "".join(out)


def training_texts():
    for f in training_files():
        with open(os.path.join(LICENSES, f), encoding="utf-8") as fh:
            yield fh.read()
    for f in pod_files():
        s = pod_text(f)
        if s:
            yield s


def training_stream(tok):
    """(token ids of every training text, separated by <|endoftext|>, sha256 of the text)."""
    ids, h = [], hashlib.sha256()
    for s in training_texts():
        h.update(s.encode())
        ids += tok.encode(s, add_special_tokens=False).ids + [T.BOS_ID]
    return torch.tensor(ids, dtype=torch.long), h.hexdigest()


def quality_prompts(tok):
    out = []
    for f, off, n in QUALITY:
        with open(os.path.join(LICENSES, f), encoding="utf-8") as fh:
            ids = tok.encode(fh.read()[off:], add_special_tokens=False).ids[:n]
        assert len(ids) == n, (f, off)
        out.append({"name": "%s@%d" % (f, off), "ids": ids})
    return out


def perl_package():
    try:
        import subprocess
        return subprocess.run(["dpkg-query", "-W", "perl-modules-5.36"], capture_output=True,
                              text=True, check=True).stdout.strip().replace("\t", " ")
    except (OSError, subprocess.CalledProcessError):
        return "perl-modules-5.36 (version unknown)"


def heldout_prompts(tok):
    with open(os.path.join(LICENSES, "Apache-2.0"), encoding="utf-8") as fh:
        text = fh.read()
    out = []
    for name, off, n, pos in PROMPTS:
        ids = tok.encode(text[off:], add_special_tokens=False).ids[:n]
        assert len(ids) == n, name
        out.append({"name": name, "ids": ids, "positions": pos})
    return out


def make_config():
    c = T.Qwen3_5TextConfig(vocab_size=T.VOCAB, rms_norm_eps=1e-6, hidden_act="silu",
                            max_position_embeddings=4096, bos_token_id=T.BOS_ID,
                            eos_token_id=T.BOS_ID, pad_token_id=None, tie_word_embeddings=False,
                            rope_theta=1000000.0, partial_rotary_factor=0.25, **DIMS)
    c.architectures = ["Qwen3_5ForCausalLM"]
    c._attn_implementation = "eager"
    return c


def build(seed):
    torch.manual_seed(seed)
    m = T.Qwen3_5ForCausalLM._from_config(make_config(), attn_implementation="eager",
                                          dtype=torch.float32)
    # GDN decay init as in Mamba2 (HF's A ~ U(0.01, 16) with dt_bias = 1 gives per-step
    # log-decays down to -21, whose fp32 in-chunk cumulative sums lose digits):
    # A ~ U(1, 16), dt = softplus(dt_bias) ~ logU(0.001, 0.1).
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("A_log"):
                p.copy_(torch.log(torch.rand(p.shape, generator=g) * 15 + 1))
            elif n.endswith("dt_bias"):
                dt = torch.exp(torch.rand(p.shape, generator=g) * (math.log(0.1) - math.log(0.001))
                               + math.log(0.001))
                p.copy_(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
    return m


def lr_at(step, steps):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, steps - WARMUP)
    return LR * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train(model, stream, steps, seed, log):
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), weight_decay=0.01)
    g = torch.Generator().manual_seed(seed + 2)
    model.train()
    t0, ema = time.time(), None
    hist = []
    for step in range(steps):
        starts = torch.randint(0, len(stream) - SEQ - 1, (BATCH,), generator=g)
        x = torch.stack([stream[s:s + SEQ + 1] for s in starts.tolist()])
        for pg in opt.param_groups:
            pg["lr"] = lr_at(step, steps)
        out = model(input_ids=x[:, :-1], use_cache=False)
        loss = torch.nn.functional.cross_entropy(out.logits.reshape(-1, T.VOCAB).float(),
                                                 x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        v = float(loss.detach())
        ema = v if ema is None else 0.95 * ema + 0.05 * v
        hist.append(v)
        if step % 20 == 0 or step == steps - 1:
            log("step %4d loss %.4f (ema %.4f) lr %.2e  %.0f s" % (step, v, ema, lr_at(step, steps),
                                                                  time.time() - t0))
    model.eval()
    return hist, time.time() - t0


@torch.no_grad()
def evaluate(model, plist):
    """(mean next-token loss, mean top-1 probability, top-1 accuracy) over all positions."""
    nll, pmax, acc, n = 0.0, 0.0, 0, 0
    for p in plist:
        lg = T.full_logits(model, p["ids"])
        pr = torch.softmax(lg.double(), -1)
        pmax += float(pr.max(-1).values.sum())
        tgt = torch.tensor(p["ids"][1:])
        nll += float(-torch.log(pr[:-1].gather(1, tgt[:, None])).sum())
        acc += int((pr[:-1].argmax(-1) == tgt).sum())
        n += len(p["ids"])
    m = n - len(plist)
    return nll / m, pmax / n, acc / m


def copy_tokenizer(out):
    src = os.path.join(T.repo_root(), "tests", "data", "models", "tiny-text")
    for f in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copyfile(os.path.join(src, f), os.path.join(out, f))


def save(model, out):
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        with open(os.path.join(tmp, "config.json")) as f:
            cfg = json.load(f)
        with safe_open(os.path.join(tmp, "model.safetensors"), "pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    assert "lm_head.weight" in tensors
    MT.write_dir(out, MT.to_bf16_file(tensors), MT.fix_config(cfg, "text", True))
    copy_tokenizer(out)
    ref = build(0)
    ref.load_state_dict(model.state_dict())
    ref.eval()
    T.round_bf16_(ref)
    MT.verify("text", ref, out)
    os.chmod(os.path.join(out, "model.safetensors"), 0o644)
    return sum(t.numel() for t in tensors.values()), os.path.getsize(os.path.join(out, "model.safetensors"))


def golden(model_dir, out_dir, info):
    """make_golden.py's format for the held-out text prompts of this model."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_golden as MG
    m = MG.load(model_dir)
    plist = heldout_prompts(tokenizer())
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    loss, pmax, acc = evaluate(m, plist)
    man = {"model": NAME, "vocab_size": T.VOCAB, "reference": T.reference_string(),
           "generator": {"commands": ["tools/reference/make_trained_tiny.py",
                                      "tools/reference/make_trained_tiny.py --golden-only"],
                         "weight_seed": SEED, "prompt_source": LICENSES + "/Apache-2.0 (held out)",
                         "versions": T.versions()},
           "heldout": {"loss": round(loss, 4), "mean_top1_prob": round(pmax, 4),
                       "top1_accuracy": round(acc, 4)},
           "prompts": [], "greedy": []}
    man["generator"].update(info)
    d64 = T.fp64_diffs(m, plist)
    for p in plist:
        lg = T.full_logits(m, p["ids"])
        rows = lg if p["positions"] == "all" else lg[-1:]
        d_all, d_stored, std = d64[p["name"]]
        fn = p["name"] + ".f32"
        shape = MG.write_f32(os.path.join(out_dir, fn), rows)
        man["prompts"].append({"name": p["name"], "ids": p["ids"], "logits": fn,
                               "positions": p["positions"], "n_positions": int(shape[0]),
                               "absmax": float(rows.abs().max()), "logit_std": round(std, 4),
                               "fp64_max_abs_diff": float("%.3g" % d_stored),
                               "fp64_max_abs_diff_all_positions": float("%.3g" % d_all)})
    byname = {p["name"]: p["ids"] for p in plist}
    sp = T.split_diffs(m, byname["text129"])
    man["conditioning"] = {
        "fp64_max_abs_diff": float("%.3g" % max(v[0] for v in d64.values())),
        "hf_split_max_abs_diff_text129": {k: float("%.3g" % v) for k, v in sp.items()}}
    # test_golden.c holds the engine to 1e-5 of the fp64 reference and of one call: HF fp32
    # must meet that itself on this model, as make_golden.py demands of the random fixtures
    if man["conditioning"]["fp64_max_abs_diff"] > T.MAX_FP64_DIFF or max(sp.values()) > T.MAX_SPLIT_DIFF:
        raise SystemExit("ill-conditioned: HF fp32 vs fp64 %g, splits %g (max %g / %g)"
                         % (man["conditioning"]["fp64_max_abs_diff"], max(sp.values()),
                            T.MAX_FP64_DIFF, T.MAX_SPLIT_DIFF))
    for pn in GREEDY:
        gen_toks, gen_gaps = T.greedy_generate(m, byname[pn], T.GREEDY_N)
        toks, gaps = T.greedy_manual(m, byname[pn], T.GREEDY_N)
        if gen_toks != toks:
            raise SystemExit("%s: generate %s != manual argmax %s" % (pn, gen_toks, toks))
        if min(gaps) < T.MIN_GAP or any(t in T.EOS_IDS for t in toks):
            raise SystemExit("%s: greedy gap %.4g / EOS: choose other prompts" % (pn, min(gaps)))
        man["greedy"].append({"prompt": pn, "n": T.GREEDY_N, "tokens": toks,
                              "text": tokenizer().decode(toks),
                              "gaps": [round(x, 6) for x in gaps], "min_gap": round(min(gaps), 6)})
    qp = quality_prompts(tokenizer())
    qloss, qpmax, qacc = evaluate(m, qp)
    man["quality_prompts"] = qp
    man["quality_prompts_note"] = ("held-out text for test_quant_quality.c only (no logits stored); "
                                   "HF: loss %.4f, mean top-1 prob %.4f, top-1 acc %.4f" % (qloss, qpmax, qacc))
    T.write_json(os.path.join(out_dir, "manifest.json"), man)
    print("quality prompts: %d x %d tokens, loss %.4f, mean top-1 prob %.4f, top-1 acc %.4f"
          % (len(qp), QUALITY[0][2], qloss, qpmax, qacc))
    print("golden: held-out loss %.4f, mean top-1 prob %.4f, top-1 acc %.4f, HF fp32 vs fp64 %.3g, "
          "splits %.3g" % (loss, pmax, acc, man["conditioning"]["fp64_max_abs_diff"], max(sp.values())))
    for gr in man["greedy"]:
        print("  greedy %s: min gap %.4f %r" % (gr["prompt"], gr["min_gap"], gr["text"]))


def main():
    root = T.repo_root()
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "models", NAME))
    ap.add_argument("--golden-out", default=os.path.join(root, "tests", "data", "golden", NAME))
    ap.add_argument("--golden-only", action="store_true")
    a = ap.parse_args()
    info_path = os.path.join(a.out, "training.json")
    if not a.golden_only:
        tok = tokenizer()
        stream, sha = training_stream(tok)
        plist = heldout_prompts(tok)
        print("training tokens %d (sha256 of text %s), licences %s + POD of %d files (%s)"
              % (len(stream), sha, training_files(), len(pod_files()), perl_package()))
        model = build(a.seed)
        print("params %d" % sum(p.numel() for p in model.parameters()))
        hist, secs = train(model, stream, a.steps, a.seed, lambda s: print(s, flush=True))
        final = float(np.mean(hist[-20:]))
        loss, pmax, acc = evaluate(model, plist)
        print("trained %d steps in %.0f s: train loss (mean of last 20) %.4f; held-out loss %.4f, "
              "mean top-1 prob %.4f, top-1 acc %.4f" % (a.steps, secs, final, loss, pmax, acc))
        os.makedirs(a.out, exist_ok=True)
        numel, size = save(model, a.out)
        info = {"command": "tools/reference/make_trained_tiny.py --steps %d --seed %d" % (a.steps, a.seed),
                "seed": a.seed, "steps": a.steps, "batch": BATCH, "seq": SEQ, "lr": LR,
                "warmup": WARMUP, "optimizer": "AdamW(0.9, 0.95), wd 0.01, cosine to 10%, clip 1.0",
                "train_seconds": round(secs), "train_loss_last20": round(final, 4),
                "train_tokens": len(stream), "train_text_sha256": sha,
                "train_files": [LICENSES + "/" + f for f in training_files()] +
                               ["POD of the %d .pm/.pod files under %s (%s)" % (len(pod_files()), PERL_POD,
                                                                           perl_package())],
                "held_out_files": [LICENSES + "/" + f for f in HELD_OUT],
                "params": numel, "safetensors_bytes": size}
        T.write_json(info_path, info)
        print("wrote %s: %d params, %d bytes" % (a.out, numel, size))
    with open(info_path) as f:
        info = json.load(f)
    golden(a.out, a.golden_out, {"training": info})


if __name__ == "__main__":
    main()
