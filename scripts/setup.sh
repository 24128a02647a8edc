#!/usr/bin/env bash
# Installs what Pagoda needs to build and test (Debian packages), fetches the default
# model, then configures and builds into build/. Idempotent: quick when all is there.
#   scripts/setup.sh            # packages + default model + Release build
#   PAGODA_SKIP_MODEL=1 ...     # skip the model download
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libboost1.81-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libtomlplusplus-dev libpcre2-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-pip python3-venv unzip
  chromium chromium-driver  # the chat page's browser test (tests/e2e/webui_test.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ -z "${PAGODA_SKIP_MODEL:-}" ]]; then
  scripts/fetch_default_model.sh
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
