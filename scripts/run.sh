#!/usr/bin/env bash
# Sets up Pagoda and runs its main job on the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/pagoda inspect models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"
