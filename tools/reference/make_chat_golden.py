#!/usr/bin/env python3
"""Render the committed chat conversations through the official Qwen3.5/3.6 templates.

Reads tests/data/chat/conversations.jsonl (one conversation per line) and writes, for each
conversation and each template it names, either
  tests/data/chat/expected/<name>.<template>.txt   the exact prompt bytes, or
  tests/data/chat/expected/<name>.<template>.err   "<ExceptionClass>\n<message>" when rendering fails.

Rendering is what an OpenAI-compatible server built on transformers does:
  1. vLLM's request preprocessing (vllm/entrypoints/chat_utils.py `_postprocess_messages`): an
     assistant tool call's `arguments` given as a JSON string is parsed with json.loads (key
     order kept); falsy arguments (missing, null, "", {}) become {}.
  2. transformers' own `PreTrainedTokenizerBase.apply_chat_template(..., tokenize=False)` on a
     tokenizer whose `chat_template` is the vendored template: it drops None-valued message keys,
     aliases `reasoning`/`thinking` to `reasoning_content`, and renders with transformers'
     sandboxed Jinja environment (its `tojson` = json.dumps(ensure_ascii=False), no key sorting).
  An empty message list never reaches the template in apply_chat_template (it raises its own
  ValueError first), so for that case the template is rendered with transformers'
  `render_jinja_template` directly to record the template's own message.

Conversation line fields: name, messages, tools (optional), add_generation_prompt (default
true), enable_thinking / preserve_thinking / add_vision_id (optional; absent = undefined in the
template), templates (optional list, default ["qwen3_6", "qwen3_5"]).

Run on demand with the reference venv (pinned: transformers 5.24.0, jinja2 3.1.6):
  /work/venvs/ref/bin/python tools/reference/make_chat_golden.py
"""
import json
import os
import sys

import jinja2
import transformers
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
from transformers.utils.chat_template_utils import render_jinja_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "chat")
TEMPLATES = ("qwen3_6", "qwen3_5", "qwen3_5_nothink")
DEFAULT_TEMPLATES = ["qwen3_6", "qwen3_5"]


def vllm_postprocess(messages):
    """vLLM parses string tool-call arguments into objects before the template sees them."""
    for m in messages:
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls")
        if not isinstance(calls, list):
            continue
        for call in calls:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            args = fn.get("arguments")
            if args:
                if not isinstance(args, dict):
                    fn["arguments"] = json.loads(args)
            else:
                fn["arguments"] = {}
    return messages


def render(tok, template_text, conv):
    messages = vllm_postprocess(json.loads(json.dumps(conv["messages"])))
    kwargs = {}
    for key in ("enable_thinking", "preserve_thinking", "add_vision_id"):
        if key in conv:
            kwargs[key] = conv[key]
    agp = conv.get("add_generation_prompt", True)
    tools = conv.get("tools")
    if isinstance(messages, list) and len(messages) == 0:
        out, _ = render_jinja_template(conversations=[messages], tools=tools,
                                       chat_template=template_text,
                                       add_generation_prompt=agp, **kwargs)
        return out[0]
    tok.chat_template = template_text
    return tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                   add_generation_prompt=agp, **kwargs)


def main():
    if transformers.__version__ != "5.24.0" or jinja2.__version__ != "3.1.6":
        print(f"warning: pinned transformers 5.24.0 / jinja2 3.1.6, found "
              f"{transformers.__version__} / {jinja2.__version__}", file=sys.stderr)
    texts = {}
    for t in TEMPLATES:
        with open(os.path.join(DATA, "templates", t + ".jinja"), encoding="utf-8") as f:
            texts[t] = f.read()
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"x": 0}, unk_token="x")))
    out_dir = os.path.join(DATA, "expected")
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.endswith(".txt") or f.endswith(".err"):
            os.remove(os.path.join(out_dir, f))
    names = set()
    n_ok = n_err = 0
    with open(os.path.join(DATA, "conversations.jsonl"), encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            conv = json.loads(line)
            name = conv["name"]
            if name in names:
                raise SystemExit(f"line {lineno}: duplicate name {name}")
            names.add(name)
            for t in conv.get("templates", DEFAULT_TEMPLATES):
                base = os.path.join(out_dir, f"{name}.{t}")
                try:
                    text = render(tok, texts[t], conv)
                except Exception as e:  # the template's raise_exception, or a Python error
                    with open(base + ".err", "w", encoding="utf-8", newline="") as g:
                        g.write(f"{type(e).__name__}\n{e}")
                    n_err += 1
                    continue
                with open(base + ".txt", "w", encoding="utf-8", newline="") as g:
                    g.write(text)
                n_ok += 1
    print(f"{len(names)} conversations: {n_ok} rendered prompts, {n_err} expected errors")


if __name__ == "__main__":
    main()
