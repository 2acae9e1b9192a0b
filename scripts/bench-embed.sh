#!/usr/bin/env bash
# Embedding speed, ours against sentence-transformers (torch, CPU) on the same texts in one run, and
# the cosine between both implementations' vectors. Installs sentence-transformers into a virtual
# environment under the cache directory on first use (torch is a large download).
# Usage: bash scripts/bench-embed.sh [CORPUS] [extra flags for `chunkscope-bench embed`]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CHUNKSCOPE_ST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/chunkscope/st-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import sentence_transformers" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check sentence-transformers
fi
bench() { cargo run --locked --quiet --release -p chunkscope-bench -- "$@"; }
corpus="${1:-examples}"
shift || true
echo "== texts that fill the window (paragraphs joined to >= 2000 characters)"
bench embed "$corpus" --min-chars 2000 --reference "$venv/bin/python" "$@"
echo "== paragraphs as they are"
bench embed "$corpus" --reference "$venv/bin/python" "$@"
