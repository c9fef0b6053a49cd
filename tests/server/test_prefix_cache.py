"""Prefix caching end to end: a chat re-sent turn by turn reports cached
prompt tokens in usage.prompt_tokens_details.cached_tokens, /metrics counts
the lookups and hits, the answers are the same as with --no-prefix-cache, and
--no-prefix-cache reports 0 cached tokens."""
import pytest
import requests

from conftest import MODEL_NAME, Server


def _conversation(client, turns):
    msgs = [{"role": "system", "content": "You are a terse assistant that answers in one word."}]
    out = []
    for t in turns:
        msgs.append({"role": "user", "content": t})
        r = client.chat.completions.create(model=MODEL_NAME, messages=msgs, max_tokens=12, temperature=0)
        out.append(r)
        msgs.append({"role": "assistant", "content": r.choices[0].message.content or ""})
    return out


TURNS = [
    "Tell me about the weather in a very long sentence " * 6,
    "And what about tomorrow? Please think about it carefully. " * 4,
    "Summarise the two answers above in one line. " * 3,
]


@pytest.fixture(scope="module")
def nocache():
    s = Server("--max-num-seqs", "4", "--max-model-len", "2048", "--prefill-chunk", "64", "--no-prefix-cache")
    yield s
    s.stop()


def test_repeated_chat_reports_cached_tokens(client, server):
    before = server.metrics()
    rs = _conversation(client, TURNS)
    # the first turn may hit what other tests left; later turns must resume at
    # least at the end of the previous turn's history
    for prev, r in zip(rs, rs[1:]):
        cached = r.usage.prompt_tokens_details.cached_tokens
        assert cached > 0, r.usage
        assert cached >= prev.usage.prompt_tokens - 8, (cached, prev.usage.prompt_tokens)
        assert cached < r.usage.prompt_tokens
    # the same request again: everything but the tail is cached
    again = client.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": TURNS[0]}], max_tokens=4, temperature=0)
    again2 = client.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": TURNS[0]}], max_tokens=4, temperature=0)
    assert again2.usage.prompt_tokens_details.cached_tokens > 0
    assert again2.choices[0].message.content == again.choices[0].message.content
    after = server.metrics()
    key = 'hyla:prefix_cache_hits_total{model_name="%s"}' % MODEL_NAME
    qkey = 'hyla:prefix_cache_queries_total{model_name="%s"}' % MODEL_NAME
    assert after[key] > before.get(key, 0)
    assert after[qkey] > before.get(qkey, 0)
    assert after['hyla:prefix_cache_checkpoints{model_name="%s"}' % MODEL_NAME] > 0
    assert after['hyla:prefix_cache_checkpoint_bytes{model_name="%s"}' % MODEL_NAME] > 0
    assert 'hyla:prefix_cache_checkpoint_evictions_total{model_name="%s"}' % MODEL_NAME in after
    assert after['hyla:prefix_cache_blocks{model_name="%s"}' % MODEL_NAME] > 0


def test_cached_answers_equal_uncached(client, nocache):
    import openai
    c2 = openai.OpenAI(base_url=nocache.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    a = _conversation(client, TURNS)
    b = _conversation(c2, TURNS)
    for x, y in zip(a, b):
        assert x.choices[0].message.content == y.choices[0].message.content
        assert y.usage.prompt_tokens_details.cached_tokens == 0
    assert any(x.usage.prompt_tokens_details.cached_tokens > 0 for x in a)
    text = requests.get(nocache.url + "/metrics", timeout=5).text
    assert "hyla:prefix_cache_hits_total" not in text


def test_streaming_usage_cached_tokens(client):
    msgs = [{"role": "user", "content": "Stream me something about caching. " * 5}]
    for _ in range(2):
        stream = client.chat.completions.create(model=MODEL_NAME, messages=msgs, max_tokens=4, temperature=0,
                                                stream=True, stream_options={"include_usage": True})
        usage = None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
    assert usage is not None and usage.prompt_tokens_details.cached_tokens > 0
