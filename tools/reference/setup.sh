#!/bin/sh
# Creates tools/reference/.venv with the pinned reference stack (idempotent).
# Run on demand only; nothing in `make test` needs Python.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
# CPU-only torch wheels are enough (and much smaller) for fixture generation.
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet \
    --extra-index-url https://download.pytorch.org/whl/cpu \
    -r "$here/requirements.txt"
"$venv/bin/python" -c 'import torch, transformers, tokenizers, safetensors, numpy, jinja2; print("reference venv ok:", "torch", torch.__version__, "transformers", transformers.__version__)'
