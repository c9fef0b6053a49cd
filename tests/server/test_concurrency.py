"""Continuous batching under concurrency: batch invariance (anchors §4 item 3:
N identical greedy prompts must give one answer, and each prompt must give
its solo answer), cancellation of abandoned streams, and a bounded load test
with mixed lengths and errors (no unexpected failures, flat RSS)."""
import json
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from conftest import MODEL_NAME, SANITIZED


def greedy(server, prompt, n_tokens, session=None):
    s = session or requests
    r = s.post(server.url + "/v1/completions",
               json={"model": MODEL_NAME, "prompt": prompt, "max_tokens": n_tokens, "temperature": 0, "ignore_eos": True})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def test_identical_prompts_batched(server):
    prompt = "In a hole in the ground there lived"
    solo = greedy(server, prompt, 48)
    with ThreadPoolExecutor(16) as ex:
        outs = list(ex.map(lambda _: greedy(server, prompt, 48), range(16)))
    assert set(outs) == {solo}


def test_different_prompts_batched(server):
    rng = random.Random(3)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    prompts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 60))) for _ in range(6 if SANITIZED else 16)]
    lengths = [rng.randint(8, 48) for _ in prompts]
    solo = [greedy(server, p, n) for p, n in zip(prompts, lengths)]
    with ThreadPoolExecutor(16) as ex:
        batched = list(ex.map(lambda pn: greedy(server, *pn), zip(prompts, lengths)))
    assert batched == solo
    # seeded sampling is batch-invariant too
    def sample(p):
        r = requests.post(server.url + "/v1/completions", json={"prompt": p, "max_tokens": 24, "temperature": 1.0,
                                                               "top_k": 50, "seed": 99, "ignore_eos": True})
        return r.json()["choices"][0]["text"]
    solo_s = [sample(p) for p in prompts[:8]]
    with ThreadPoolExecutor(8) as ex:
        assert list(ex.map(sample, prompts[:8])) == solo_s


def _running(server):
    m = server.metrics()
    return m[f'hyla:num_requests_running{{model_name="{MODEL_NAME}"}}'], m[f'hyla:num_requests_waiting{{model_name="{MODEL_NAME}"}}']


def test_cancelled_streams_free_slots(server):
    body = json.dumps({"model": MODEL_NAME, "prompt": "stream me", "max_tokens": 1800, "stream": True,
                       "ignore_eos": True}).encode()
    socks = []
    for _ in range(8):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        socks.append(s)
    for s in socks:  # every stream is producing tokens
        got = b""
        while got.count(b"data: ") < 3:
            chunk = s.recv(65536)
            assert chunk
            got += chunk
    assert _running(server)[0] >= 1
    t0 = time.time()
    for s in socks:
        s.close()
    while time.time() - t0 < 1.0:
        if _running(server) == (0, 0):
            break
        time.sleep(0.02)
    assert _running(server) == (0, 0), "abandoned streams still running after 1 s"
    m = server.metrics()
    assert m[f'hyla:request_success_total{{model_name="{MODEL_NAME}",finished_reason="abort"}}'] >= 8
    # and the server is fine
    assert greedy(server, "still alive", 4)


def test_load_mixed(server):
    """500 requests over 32 connections: short/long, chat/completions,
    streaming or not, some invalid. Every answer must be the expected kind."""
    sanitized = SANITIZED
    n_req = 60 if sanitized else 500
    rng = random.Random(11)
    jobs = []
    for i in range(n_req):
        kind = rng.random()
        if kind < 0.1:
            jobs.append(("bad", {"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}))
        elif kind < 0.15:
            jobs.append(("bad_model", {"model": "nope", "prompt": "x"}))
        elif kind < 0.55:
            jobs.append(("comp", {"prompt": "load " * rng.randint(1, 40), "max_tokens": rng.randint(1, 24),
                                  "temperature": rng.choice([0, 0.8]), "stream": rng.random() < 0.3}))
        else:
            jobs.append(("chat", {"messages": [{"role": "user", "content": "hey " * rng.randint(1, 30)}],
                                  "max_tokens": rng.randint(1, 24), "stream": rng.random() < 0.3, "seed": i}))
    local = threading.local()
    failures = []
    rss = []

    def run(i_job):
        i, (kind, body) = i_job
        if not hasattr(local, "s"):
            local.s = requests.Session()
        path = "/v1/chat/completions" if kind in ("chat", "bad") else "/v1/completions"
        try:
            r = local.s.post(server.url + path, json=body, timeout=60)
            want = {"bad": 400, "bad_model": 404}.get(kind, 200)
            if r.status_code != want:
                failures.append((i, kind, r.status_code, r.text[:200]))
            elif want == 200 and body.get("stream"):
                if not r.text.rstrip().endswith("data: [DONE]"):
                    failures.append((i, kind, "stream did not end with [DONE]"))
            elif want == 200:
                u = r.json()["usage"]
                if u["completion_tokens"] > body["max_tokens"]:
                    failures.append((i, kind, "too many tokens"))
        except Exception as e:  # noqa: BLE001 - any exception is a failure to report
            failures.append((i, kind, repr(e)))
        if i % 100 == 99:
            rss.append(server.rss_kb())

    t0 = time.time()
    with ThreadPoolExecutor(32) as ex:
        list(ex.map(run, enumerate(jobs)))
    dt = time.time() - t0
    print(f"\n{n_req} requests in {dt:.1f} s; RSS by hundred (kB): {rss}")
    assert not failures, failures[:10]
    assert _running(server) == (0, 0)
    if not sanitized:
        # memory flat: the last hundred does not grow beyond the second one by more than 8 MiB
        assert len(rss) == 5
        assert rss[-1] - rss[1] < 8 * 1024, rss
