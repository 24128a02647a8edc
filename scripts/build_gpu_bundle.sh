#!/usr/bin/env bash
# Builds what the GPU check runs (Release, sm_90, into build-gpu/) and assembles
# gpu-bundle/: one folder to carry to a GPU machine that has the CUDA 13 toolkit and its
# driver but not Debian's libraries (spdlog, fmt, toml++, ...) and no network. It holds
#   pagoda, the test binaries   RPATH $ORIGIN/lib (DT_RPATH: also for their libraries)
#   lib/                        the shared libraries they need that such a machine may
#                               lack (not glibc, libstdc++/libgcc, the driver, cudart or
#                               cuBLAS, which the machine's toolkit has)
#   data/, shared/              the test models and reference data the checks read: data/
#                               from tests/data/ (the stories260K models, the reference
#                               outputs), shared/models/ the large random-weight models
#                               taken from ../shared (those absent are left out, and their
#                               tests skip); the binaries look for them under
#                               /tmp/pagoda-gpu-bundle, which gpu_check.sh links to this
#                               folder
#   prompts/                    the benchmark's real prompts (bench/prompts)
#   e2e/, models/tiny-smollm2.gguf, wheels/
#                               the end-to-end OpenAI-client tests, a 5 MB random-weight
#                               model with the default model's tokenizer and chat template
#                               for them, and the Python wheels they need (for the GPU
#                               machine's Python, PAGODA_BUNDLE_PYTHON, default 3.12)
#   gpu_check.sh, MANIFEST.txt
# Then run there: gpu-bundle/gpu_check.sh [LOG_DIR]   (or with $OUT set). Where the
# folder is over what a device run may carry, gpu-bundle.tar.gz is written beside it:
# carry that and run tar xzf gpu-bundle.tar.gz && gpu-bundle/gpu_check.sh.
#
#   scripts/build_gpu_bundle.sh
#   PAGODA_GPU_TESTS="test_backend_cuda test_model" scripts/build_gpu_bundle.sh
#   PAGODA_BUNDLE_MODELS="rand-llama-Q8_0.gguf rand-gpt2-Q8_0.gguf" ...  (from ../shared/models)
#   PAGODA_BUNDLE_JOBS=2 (parallel compile jobs, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
readonly root="$PWD"
readonly build="build-gpu"
readonly bundle="gpu-bundle"
readonly jobs="${PAGODA_BUNDLE_JOBS:-2}"
readonly max_bundle_mb=60
# Where the bundled binaries find data/ and shared/ (compiled in as PAGODA_TEST_DATA_DIR
# and PAGODA_SHARED_DIR).
readonly shared_link="/tmp/pagoda-gpu-bundle"
readonly shared_src="${PAGODA_SHARED_DIR:-$(cd .. && pwd)/shared}"
# Test binaries with GPU tests: add the engine and model tests once they take a device.
read -r -a gpu_tests <<<"${PAGODA_GPU_TESTS:-test_backend_cuda test_gpu test_engine}"
# Large models taken from the shared folder beside the checkout (the stories260K family
# comes from tests/data/): a random-weight model of the K quants. The other random-weight
# models' tests skip with a line; name them here to take them.
read -r -a models <<<"${PAGODA_BUNDLE_MODELS:-rand-llama-Q4_K_M.gguf}"
readonly python_version="${PAGODA_BUNDLE_PYTHON:-3.12}"
readonly default_model="models/SmolLM2-135M-Instruct.Q4_1.gguf"

say() { echo "bundle: $*"; }

configure_and_build() {
  # Prefer the static form of a library found by find_library (PCRE2 through pkg-config)
  # where Debian ships one; the rest (spdlog, fmt, toml++) come as shared libraries.
  mkdir -p "$build"
  cat >"$build/prefer_static.cmake" <<'EOF'
set(CMAKE_FIND_LIBRARY_SUFFIXES ".a" ".so")
EOF
  say "configuring $build/ (Release, sm_90)"
  # $ORIGIN is for the loader to expand, not the shell.
  # shellcheck disable=SC2016
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DPAGODA_BUILD_TESTS=ON -DPAGODA_BUILD_BENCHMARKS=OFF \
    -DCMAKE_PROJECT_INCLUDE="$root/$build/prefer_static.cmake" \
    -DPAGODA_TEST_DATA_DIR="$shared_link/data" -DPAGODA_SHARED_DIR="$shared_link/shared" \
    -DCMAKE_BUILD_RPATH='$ORIGIN/lib' -DCMAKE_EXE_LINKER_FLAGS="-Wl,--disable-new-dtags" >/dev/null
  say "building pagoda ${gpu_tests[*]} (-j$jobs)"
  cmake --build "$build" -j"$jobs" --target pagoda "${gpu_tests[@]}"
}

# Path of a built target's binary.
binary_of() {
  if [[ "$1" == pagoda ]]; then echo "$build/pagoda"; return; fi
  find "$build/tests" -type f -name "$1" -perm -u+x | head -n 1
}

# Libraries a GPU machine is sure to have: glibc's, the C++ runtime, the CUDA driver and
# the toolkit's runtime and cuBLAS.
is_system_library() {
  case "$1" in
    linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
      libstdc++.so* | libgcc_s.so* | libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | \
      libnvidia-*.so*) return 0 ;;
    *) return 1 ;;
  esac
}

copy_binaries_and_libraries() {
  rm -rf "$bundle"
  mkdir -p "$bundle/lib"
  local target path line name lib
  for target in pagoda "${gpu_tests[@]}"; do
    path=$(binary_of "$target")
    [[ -n "$path" ]] || { echo "bundle: $target was not built" >&2; exit 1; }
    cp "$path" "$bundle/$target"
    strip --strip-unneeded "$bundle/$target"
    while read -r line; do
      name=${line%% *}
      is_system_library "$name" && continue
      lib=$(awk '{print $3}' <<<"$line")
      if [[ "$lib" == "not" || ! -f "$lib" ]]; then
        echo "bundle: $target needs $name, which is not found here" >&2
        exit 1
      fi
      [[ -f "$bundle/lib/$name" ]] || cp -L "$lib" "$bundle/lib/$name"
    done < <(ldd "$path" | awk '/=>/ {print $1, $2, $3}')
  done
  if compgen -G "$bundle/lib/*" >/dev/null; then strip --strip-unneeded "$bundle"/lib/*; fi
}

copy_data() {
  # The committed fixtures: the stories260K models and the reference outputs the model
  # tests compare with (the tokenizer vectors are not for a GPU).
  mkdir -p "$bundle/data/reference" "$bundle/shared/models"
  cp -r tests/data/README.md tests/data/models "$bundle/data/"
  local item model
  for item in generation scoring quant stories260K-greedy.txt; do
    cp -r "tests/data/reference/$item" "$bundle/data/reference/"
  done
  for model in "${models[@]}"; do
    if [[ -f "$shared_src/models/$model" ]]; then
      cp "$shared_src/models/$model" "$bundle/shared/models/"
    else
      say "no $shared_src/models/$model: left out"
    fi
  done
  cp "$shared_src/models/README.md" "$bundle/shared/models/" 2>/dev/null || true
  chmod -R u+w "$bundle/data" "$bundle/shared"
  if [[ -f "$default_model" ]]; then
    local model_mb=$(( $(stat -c %s "$default_model") / 1000000 ))
    if (( model_mb + $(du -sm "$bundle" | cut -f1) <= max_bundle_mb )); then
      mkdir -p "$bundle/models" && cp "$default_model" "$bundle/models/"
    else
      # In two halves, each for a device run of its own beside the repository (the run
      # after joins them where gpu_check.sh's prompt lookup stage finds the model,
      # PAGODA_GPU_DEFAULT_MODEL).
      rm -rf device-parts && mkdir -p device-parts
      split -n 2 -d "$default_model" device-parts/default-model.part-
      say "$default_model ($model_mb MB) left out: the bundle must stay under $max_bundle_mb MB;" \
        "in parts under device-parts/ ($(ls device-parts | tr '\n' ' '))"
    fi
  fi
  # The benchmark's real prompts (gpu_check.sh's prompt lookup stage).
  cp -r bench/prompts "$bundle/prompts"
  cp scripts/gpu_check.sh "$bundle/"
}

# The end-to-end tests, a tiny model to serve for them (the default model's tokenizer and
# chat template, random weights: the tests check the API, not the text), and the wheels
# of what they import. Skipped, with a line, without the default model or pip.
copy_e2e() {
  mkdir -p "$bundle/e2e" "$bundle/models"
  cp tests/e2e/*.py "$bundle/e2e/"
  if [[ -f "$default_model" ]]; then
    "$build/pagoda" mkmodel -o "$bundle/models/tiny-smollm2.gguf" --tokenizer "$default_model" --embd 64 \
      --layers 2 --heads 4 --kv-heads 2 --ffn 192 --type q8_0 --tie-embeddings --ctx 2048 >/dev/null
  else
    say "no $default_model: no model for the end-to-end tests"
  fi
  # openai and jsonschema (structured_output_test and tools_test check what the server
  # returns with it) with every package they require, at the versions scripts/python_env.sh
  # installs; selenium is left out, as the GPU machine has no Chromium for webui_test.
  local requirements=(openai==3.22.1 anyio==4.16.0 httpx2==2.16.2 httpcore2==2.16.2 h11==0.16.0 idna==3.20
    jiter==0.19.0 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
    typing_extensions==4.16.0 sniffio==1.3.1 truststore==0.10.5 jinja2==3.1.6 markupsafe==3.0.3
    jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
    attrs==26.1.0)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$bundle/wheels" "${requirements[@]}" ||
    say "pip could not fetch the wheels: the end-to-end stage will skip"
}

# The newest symbol version of glibc (GLIBC_) or libstdc++ (GLIBCXX_) a bundled file
# needs: the GPU machine's must be as new (glibc >= 2.36 there).
newest_version() {
  local prefix="$1"
  shift
  objdump -T "$@" 2>/dev/null | grep -o "${prefix}_[0-9.]*" | sort -u -V | tail -n 1
}

check_and_describe() {
  local file unresolved
  for file in "$bundle"/pagoda "$bundle"/test_*; do
    unresolved=$(env -u LD_LIBRARY_PATH ldd "$file" | grep "not found" || true)
    [[ -z "$unresolved" ]] || { echo "bundle: $file: $unresolved" >&2; exit 1; }
  done
  {
    echo "Pagoda GPU bundle"
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src CMakeLists.txt cmake tests || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(nvcc --version | tail -n 1)"
    echo "CUDA architectures: 90"
    echo "newest symbols needed: $(newest_version GLIBC "$bundle"/pagoda "$bundle"/test_* "$bundle"/lib/*)," \
      "$(newest_version GLIBCXX "$bundle"/pagoda "$bundle"/test_* "$bundle"/lib/*)"
    echo "shared data path compiled in: $shared_link/shared"
    echo "test data path compiled in: $shared_link/data"
    echo
    (cd "$bundle" && find . -type f ! -name MANIFEST.txt -printf '%10s  %P\n' | sort -k2)
  } >"$bundle/MANIFEST.txt"
  local mb
  mb=$(du -sm "$bundle" | cut -f1)
  say "$bundle/ is $mb MB: $(cd "$bundle" && ls -d pagoda test_* lib/* | tr '\n' ' ')"
  rm -f "$bundle.tar.gz"
  (( mb > max_bundle_mb )) || return 0
  # Too large to carry as it is: as a gzipped tar (the binaries shrink to about half).
  tar -czf "$bundle.tar.gz" "$bundle"
  mb=$(du -sm "$bundle.tar.gz" | cut -f1)
  if (( mb > max_bundle_mb )); then
    echo "bundle: $bundle.tar.gz is $mb MB, over the $max_bundle_mb MB a device run may carry" >&2
    exit 1
  fi
  say "$bundle/ is larger than a device run may carry: carry $bundle.tar.gz ($mb MB) and run" \
    "tar xzf $bundle.tar.gz && $bundle/gpu_check.sh"
}

configure_and_build
copy_binaries_and_libraries
copy_data
copy_e2e
check_and_describe
