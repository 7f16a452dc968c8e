#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the factory with translation and test extras.
# torch comes first and pinned: Argos needs stanza, which needs torch, and an unpinned torch
# would pull a multi-GB CUDA build; 2.13.0 is the CPU build this machine's pip serves.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[translate,test]"
.venv/bin/python -c "import deid_factory, spacy, argostranslate; print('deid_factory ready: spaCy', spacy.__version__)"
