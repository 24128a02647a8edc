#!/usr/bin/env bash
# Sets up (packages, default model, build) and runs every test: the GoogleTest suite
# through CTest, then each libFuzzer target for a short bounded time.
#   scripts/test.sh                 # everything
#   PAGODA_FUZZ_SECONDS=0 ...       # skip fuzzing
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/python_env.sh  # jinja2 and openai for the tests that compare with Python
ctest --test-dir build --output-on-failure -j"$(nproc)"

fuzz_seconds="${PAGODA_FUZZ_SECONDS:-30}"
if [[ "$fuzz_seconds" != 0 ]]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
