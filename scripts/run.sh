#!/usr/bin/env bash
# Build chunkscope (the first build takes several minutes: cargo shows its progress), fetch the
# model if needed (progress shown before the screen opens) and open the workbench on the bundled
# example corpus. Extra arguments go to chunkscope.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
  set -- examples
fi
# Run through cargo: the binary is found wherever the target directory is (CARGO_TARGET_DIR,
# build.target-dir). Not --quiet: that hides cargo's progress too, and a first build is minutes
# of a blank terminal.
exec cargo run --locked --bin chunkscope -- "$@"
