"""Every error case with its status and OpenAI error shape; a bad request
never disturbs the server."""
import threading

import openai
import pytest
import requests

from conftest import MODEL_NAME, SANITIZED, Server

MSG = [{"role": "user", "content": "hi"}]


def check_error(r, status, param=None):
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert isinstance(e["message"], str) and e["message"]
    assert isinstance(e["type"], str)
    assert "param" in e and "code" in e
    if param is not None:
        assert e["param"] == param, e
    return e


@pytest.mark.parametrize("body,param", [
    ('{"messages": [', None),
    ('[1, 2]', None),
    ('{"messages": "hi"}', "messages"),
    ('{"messages": []}', "messages"),
    ('{"messages": [{"role": "wizard", "content": "x"}]}', "messages[0]"),
    ('{"messages": [{"role": "user", "content": "x"}], "temperature": "warm"}', "temperature"),
    ('{"messages": [{"role": "user", "content": "x"}], "top_p": 1.5}', "top_p"),
    ('{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}', "max_tokens"),
    ('{"messages": [{"role": "user", "content": "x"}], "n": 100}', "n"),
    ('{"messages": [{"role": "user", "content": "x"}], "stop": 3}', "stop"),
    ('{"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 50}', "top_logprobs"),
    ('{"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}}', "stream_options"),
    ('{"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}', "tool_choice"),
    ('{"messages": [{"role": "user", "content": "x"}], "seed": "abc"}', "seed"),
    ('{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}',
     "messages[0].content[0]"),
    ('{"messages": [{"role": "user", "content": "x"}, {"role": "system", "content": "late"}]}', "messages"),
])
def test_chat_400(server, body, param):
    r = requests.post(server.url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    check_error(r, 400, param)


def test_completions_400(server):
    for body, param in [({"prompt": [1, 2, 100000]}, "prompt[2]"), ({"prompt": ""}, "prompt"),
                        ({"prompt": ["a", "b"]}, "prompt"), ({"prompt": "a", "echo": True}, "echo"), ({}, "prompt")]:
        check_error(requests.post(server.url + "/v1/completions", json=body), 400, param)


def test_prompt_too_long(client, server):
    with pytest.raises(openai.BadRequestError) as ei:
        client.completions.create(model=MODEL_NAME, prompt="word " * 3000, max_tokens=4)
    assert ei.value.status_code == 400
    assert "maximum context length" in ei.value.message
    r = requests.post(server.url + "/v1/completions", json={"prompt": "word " * 3000})
    assert check_error(r, 400, "prompt")["code"] == "context_length_exceeded"


def test_unknown_model_and_route(client, server):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-17", messages=MSG, max_tokens=2)
    check_error(requests.post(server.url + "/v1/completions", json={"model": "nope", "prompt": "x"}), 404, "model")
    check_error(requests.get(server.url + "/v2/whatever"), 404)
    check_error(requests.get(server.url + "/v1/chat/completions"), 405)


def test_server_survives_errors(client):
    ok = client.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=3, temperature=0)
    assert ok.usage.completion_tokens == 3


@pytest.fixture(scope="module")
def limited():
    s = Server("--api-key", "sekrit", "--max-body", "4096", "--max-num-seqs", "1", "--max-queue", "1")
    yield s
    s.stop()


def test_auth(limited):
    bad = openai.OpenAI(base_url=limited.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    check_error(requests.get(limited.url + "/v1/models"), 401)
    good = openai.OpenAI(base_url=limited.url + "/v1", api_key="sekrit", max_retries=0)
    assert good.models.list().data[0].id == MODEL_NAME
    assert requests.get(limited.url + "/health").status_code == 200  # health needs no key


def test_body_too_large(limited):
    r = requests.post(limited.url + "/v1/completions", data=b'{"prompt": "' + b"a" * 10000 + b'"}',
                      headers={"Authorization": "Bearer sekrit", "Content-Type": "application/json"})
    check_error(r, 413)


def test_queue_full(limited):
    c = openai.OpenAI(base_url=limited.url + "/v1", api_key="sekrit", max_retries=0, timeout=60)
    results = []

    def one():
        try:
            c.completions.create(model=MODEL_NAME, prompt="go", max_tokens=300 if SANITIZED else 1500, temperature=0,
                                 extra_body={"ignore_eos": True})
            results.append(200)
        except openai.RateLimitError as e:
            results.append(e.status_code)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(429) >= 1, results
    assert results.count(200) >= 1, results
    assert set(results) <= {200, 429}


def test_sigterm_drains():
    """SIGTERM: requests in flight finish normally, new connections are
    refused, and the process exits 0."""
    import signal
    import time
    s = Server("--max-num-seqs", "2")
    n_tok = 300 if SANITIZED else 1200
    result = {}

    def long_request():
        r = requests.post(s.url + "/v1/completions", json={"prompt": "drain", "max_tokens": n_tok, "ignore_eos": True,
                                                           "temperature": 0}, timeout=120)
        result["status"] = r.status_code
        result["tokens"] = r.json()["usage"]["completion_tokens"]

    t = threading.Thread(target=long_request)
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline and s.metrics().get(f'hyla:num_requests_running{{model_name="{MODEL_NAME}"}}', 0) < 1:
        time.sleep(0.01)
    s.proc.send_signal(signal.SIGTERM)
    t.join()
    assert result == {"status": 200, "tokens": n_tok}
    with pytest.raises(requests.ConnectionError):
        requests.get(s.url + "/health", timeout=2)
    assert s.proc.wait(timeout=30) == 0
    assert "draining" in s.logs()
    s.stop()


def test_weight_and_kernel_options():
    """hyla serve takes hyla run's weight / kernel options: a q8 server with bf16-activation
    prefill answers like any other; a bad --weights value stops it at start, naming the option."""
    s = Server("--weights", "q8", "--fast-prefill", "--max-model-len", "512")
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        r = c.completions.create(model=MODEL_NAME, prompt="weights " * 20, max_tokens=4, temperature=0)
        assert r.usage.completion_tokens == 4 or r.choices[0].finish_reason == "stop"
    finally:
        s.stop()
    with pytest.raises(RuntimeError, match="--weights expects"):
        Server("--weights", "q3")
