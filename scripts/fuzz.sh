#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for N seconds.
#   scripts/fuzz.sh [SECONDS]   (default 60)
# A crash, leak or timeout fails the run; its input is kept in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DPAGODA_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)"

mkdir -p build-fuzz/artifacts
status=0
for fuzzer in build-fuzz/fuzz/*_fuzz; do
  name=$(basename "$fuzzer" _fuzz)
  corpus="build-fuzz/corpus/$name"
  mkdir -p "$corpus"
  seeds=()
  [[ -d "fuzz/seeds/$name" ]] && seeds=("fuzz/seeds/$name")
  # The template fuzzer starts from the real and test chat templates (all committed).
  [[ "$name" == jinja ]] && seeds+=(tests/data/chat_templates tests/data/reference/chat_templates)
  options=()
  [[ -f "fuzz/$name.dict" ]] && options+=(-dict="fuzz/$name.dict")
  log="build-fuzz/$name.log"
  if "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/artifacts/$name-" "${options[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    runs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
    echo "fuzz: $name: ${seconds}s, $runs inputs, no failure"
  else
    echo "fuzz: $name FAILED; the log follows" >&2
    tail -n 60 "$log" >&2
    status=1
  fi
done
exit $status
