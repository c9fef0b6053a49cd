"""Reuse of generated tokens through the real chat path (tiny-mm fixture:
Qwen3.6 chat template, its tokenizer, a random model).

A finished reply stays in its slot; the next request resumes there only when
its prompt re-tokenizes to exactly the tokens the slot fed (prompt + reply but
its last token). With the Qwen3.6 template that needs preserve_thinking=true:
otherwise earlier assistant turns are re-rendered without their think block
(and with thinking on, without their reasoning), so the history diverges right
after "<|im_start|>assistant\\n" (README, prefix caching). The random model's
replies are steered with logit_bias to a token that re-tokenizes to itself
("ther", no leading space, which the template's |trim would strip)."""
import os

import requests

from conftest import DATA, Server

TINY_MM = os.path.join(DATA, "models", "tiny-mm")
THER = "343"  # 'ther' in the tiny-mm tokenizer
THE = "404"   # ' the'


def _metric(s, name):
    return s.metrics().get('%s{model_name="mm"}' % name, 0.0)


def _chat(s, kwargs, send_reasoning, turns=3):
    msgs = [{"role": "system", "content": "You are terse."}]
    out = []
    for t in ["Hello there, how are you?", "Tell me more please.", "And finally, summarise."][:turns]:
        msgs.append({"role": "user", "content": t})
        body = {"model": "mm", "messages": msgs, "max_tokens": 16, "temperature": 0, "logit_bias": {THER: 100}}
        body.update(kwargs)
        hits0 = _metric(s, "hyla:retained_hits_total")
        r = requests.post(s.url + "/v1/chat/completions", json=body, timeout=60).json()
        hit = _metric(s, "hyla:retained_hits_total") - hits0
        m = r["choices"][0]["message"]
        a = {"role": "assistant", "content": m.get("content") or ""}
        if send_reasoning and m.get("reasoning_content"):
            a["reasoning_content"] = m["reasoning_content"]
        msgs.append(a)
        out.append((r, hit))
    return out


def test_chat_preserve_thinking_resumes():
    s = Server("--max-num-seqs", "2", "--prefill-chunk", "64", "--served-model-name", "mm", model_dir=TINY_MM)
    ref = Server("--max-num-seqs", "2", "--prefill-chunk", "64", "--served-model-name", "mm",
                 "--no-reuse-generated", model_dir=TINY_MM)
    try:
        for kw, send in [({"chat_template_kwargs": {"enable_thinking": False, "preserve_thinking": True}}, False),
                         ({"chat_template_kwargs": {"preserve_thinking": True}}, True)]:
            got = _chat(s, kw, send)
            want = _chat(ref, kw, send)
            for i, ((r, hit), (w, whit)) in enumerate(zip(got, want)):
                assert r["choices"][0]["message"] == w["choices"][0]["message"]
                assert whit == 0
                if i == 0:
                    continue
                prev = got[i - 1][0]["usage"]
                # resumed after everything the previous request fed: its prompt + its reply but the last token
                assert hit == 1, (kw, i, r["usage"])
                assert r["usage"]["prompt_tokens_details"]["cached_tokens"] == \
                    prev["prompt_tokens"] + prev["completion_tokens"] - 1
        assert _metric(s, "hyla:retained_seqs") >= 1
        assert _metric(s, "hyla:retained_tokens") > 0
        assert 'hyla:retained_hits_total{model_name="mm"}' not in ref.metrics()
    finally:
        s.stop()
        ref.stop()


def test_chat_default_template_does_not_resume():
    """The documented limit: without preserve_thinking the re-rendered history
    drops the think block, so only the prefix cache serves."""
    s = Server("--max-num-seqs", "2", "--prefill-chunk", "64", "--served-model-name", "mm", model_dir=TINY_MM)
    try:
        for kw in [{}, {"chat_template_kwargs": {"enable_thinking": False}}]:
            got = _chat(s, kw, True)
            assert all(hit == 0 for _, hit in got)
            assert got[-1][0]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0  # the prefix cache
    finally:
        s.stop()


def test_completions_text_continuation_resumes():
    s = Server("--max-num-seqs", "2", "--prefill-chunk", "64", "--served-model-name", "mm", model_dir=TINY_MM)
    try:
        prompt, prev = "Once upon a time", None
        for i in range(3):
            r = requests.post(s.url + "/v1/completions", timeout=60, json={
                "model": "mm", "prompt": prompt, "max_tokens": 12, "temperature": 0, "logit_bias": {THE: 100}}).json()
            if prev:
                assert r["usage"]["prompt_tokens_details"]["cached_tokens"] == \
                    prev["prompt_tokens"] + prev["completion_tokens"] - 1
            prev = r["usage"]
            prompt += r["choices"][0]["text"] + " and then"
        assert _metric(s, "hyla:retained_hits_total") == 2
    finally:
        s.stop()
