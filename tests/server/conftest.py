"""Fixtures for the end-to-end server tests: start `hyla serve` on a free
loopback port with the tiny fixture model, wait until /health answers, and
stop it with SIGTERM (which must drain and exit 0).

The tiny checkpoint (tests/data/models/tiny-text, vocab 512) is combined with
the tiny tokenizer (tests/data/tokenizers/tiny, 473 tokens) in a temporary
directory of symlinks unless the model directory already has a tokenizer.json.
"""
import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import requests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("HYLA_DATA_DIR", os.path.join(ROOT, "tests", "data"))
BIN = os.environ.get("HYLA_BIN", os.path.join(ROOT, "build", "hyla"))
MODEL_NAME = "tiny"
# Set by tests/cli/test_server_e2e.sh for sanitizer builds (make asan), which
# run the model many times slower: the heavy tests then use less work.
SANITIZED = os.environ.get("HYLA_E2E_SANITIZED") == "1"


def _model_dir(tmp):
    src = os.path.join(DATA, "models", "tiny-text")
    if os.path.exists(os.path.join(src, "tokenizer.json")):
        return src
    d = os.path.join(tmp, "tiny")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(src):
        os.symlink(os.path.join(src, f), os.path.join(d, f))
    tok = os.path.join(DATA, "tokenizers", "tiny")
    for f in os.listdir(tok):
        if not os.path.exists(os.path.join(d, f)):
            os.symlink(os.path.join(tok, f), os.path.join(d, f))
    return d


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *extra, env=None, model_dir=None):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = model_dir or _model_dir(self.tmp.name)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.tmp.name, "server.log"), "w+")
        args = [BIN, "serve", "-m", self.dir, "--port", str(self.port), "--served-model-name", MODEL_NAME,
                "--threads", "1", *extra]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("hyla serve exited at start:\n" + self.logs())
            try:
                if requests.get(self.url + "/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.time() > deadline:
                raise RuntimeError("hyla serve did not come up:\n" + self.logs())
            time.sleep(0.05)

    def logs(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def metrics(self):
        text = requests.get(self.url + "/metrics", timeout=5).text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise
            assert rc == 0, "hyla serve did not exit 0 on SIGTERM:\n" + self.logs()
        self.log.close()
        self.tmp.cleanup()


@pytest.fixture(scope="session")
def server():
    s = Server("--max-num-seqs", "8", "--max-model-len", "2048", "--prefill-chunk", "64")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def client(server):
    import openai
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)
