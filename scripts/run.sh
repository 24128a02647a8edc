#!/usr/bin/env bash
# Sets up Pagoda (packages, default model, build) and serves the default model with the
# OpenAI-compatible API on http://127.0.0.1:8080 until Ctrl-C. Arguments go to
# `pagoda serve` (e.g. --port 9000, --host 0.0.0.0, -m OTHER.gguf).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/pagoda serve "$@"  # without -m: the default model, models/SmolLM2-135M-Instruct.Q4_1.gguf
