#!/usr/bin/env bash
# Sets up Pagoda and runs its main job on the default model: with no arguments it
# generates a continuation of a short prompt; any arguments go to `pagoda run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
if (($# == 0)); then
  set -- -p "The three most useful things to know about the Moon are" -n 96
fi
exec build/pagoda run -m "$model" "$@"
