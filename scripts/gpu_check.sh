#!/usr/bin/env bash
# The GPU check: run on a GPU machine from the bundle that scripts/build_gpu_bundle.sh
# assembles (gpu-bundle/gpu_check.sh), or from the repository root with gpu-bundle/
# beside it (scripts/gpu_check.sh). Prints the GPU and driver, runs each stage under a
# timeout (the whole within 8 minutes), writes each stage's full log to $OUT (or to the
# folder given, else ./gpu-check-logs), and ends with a summary table. Exit status 1 when
# a stage failed.
#
#   gpu-bundle/gpu_check.sh [LOG_DIR]
#   PAGODA_GPU_STAGES="gpu cuda_backend" gpu-bundle/gpu_check.sh   # some stages only
#
# Adding a stage: write stage_NAME (it runs binaries through run_logged, returns 0 on
# success, 2 when skipped) and add NAME to all_stages below with its timeout.
set -uo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
started=$(date +%s)
readonly script_dir started
readonly total_budget_s="${PAGODA_GPU_CHECK_SECONDS:-420}"  # the stages' timeouts are cut to what is left

find_bundle() {
  local candidate
  for candidate in "${PAGODA_GPU_BUNDLE:-}" "$script_dir" "$script_dir/../gpu-bundle" "$PWD/gpu-bundle"; do
    [[ -n "$candidate" && -f "$candidate/MANIFEST.txt" ]] && { (cd "$candidate" && pwd); return; }
  done
  echo "gpu_check: no bundle (a folder with MANIFEST.txt): build it with scripts/build_gpu_bundle.sh" >&2
  exit 2
}
bundle="$(find_bundle)"
readonly bundle
readonly log_dir="${OUT:-${1:-$PWD/gpu-check-logs}}"
mkdir -p "$log_dir"

# The binaries find their libraries through RPATH $ORIGIN/lib; cuBLAS comes from the
# machine's toolkit, wherever the loader or a usual place has it.
setup_environment() {
  # A copy that lost the executable bits (an archive, a file transfer) still runs.
  chmod u+x "$bundle"/pagoda "$bundle"/test_* 2>/dev/null
  local dirs="$bundle/lib" d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -e "$d/libcublas.so.13" ]] && dirs="$dirs:$d"
  done
  export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The binaries read models and references at the path compiled into them.
  local shared_link
  shared_link=$(sed -n 's/^shared data path compiled in: \(.*\)\/shared$/\1/p' "$bundle/MANIFEST.txt")
  [[ -n "$shared_link" && "$shared_link" != "$bundle" ]] || return 0
  if [[ -L "$shared_link" || ! -e "$shared_link" ]] && ln -sfn "$bundle" "$shared_link" 2>/dev/null; then return 0; fi
  echo "gpu_check: cannot link $shared_link to the bundle: tests that read models will not find them"
}

# run_logged LOG TIMEOUT_S COMMAND...: the command's output to LOG; its exit status (124:
# timed out).
run_logged() {
  local log="$1" limit="$2"
  shift 2
  echo "\$ $*" >>"$log"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local status=$?
  [[ $status -eq 124 || $status -eq 137 ]] && echo "gpu_check: timed out after ${limit}s" >>"$log"
  return $status
}

# "12 passed, 3 skipped, 1 failed" from a GoogleTest log.
gtest_counts() {
  local log="$1" passed skipped failed
  passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+$')
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$log" | tail -n 1 | grep -oE '[0-9]+')
  failed=$(grep -oE '^\[  FAILED  \] [0-9]+ test' "$log" | tail -n 1 | grep -oE '[0-9]+')
  echo "${passed:-0} passed, ${skipped:-0} skipped, ${failed:-0} failed"
}

# --- stages: each gets its log file and its time limit ------------------------------

stage_gpu() {
  local log="$1" limit="$2"
  command -v nvidia-smi >/dev/null || { echo "no nvidia-smi" >>"$log"; note="no nvidia-smi"; return 1; }
  run_logged "$log" "$limit" nvidia-smi || return 1
  note=$(timeout "$limit" nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
    --format=csv,noheader 2>>"$log" | head -n 1)
  echo "gpu_check: GPU, driver, memory, compute capability: $note"
  echo "$note" >>"$log"
  [[ -n "$note" ]]
}

stage_libraries() {
  local log="$1" limit="$2" file status=0
  for file in "$bundle"/pagoda "$bundle"/test_*; do
    [[ -x "$file" ]] || continue
    run_logged "$log" "$limit" ldd "$file" || status=1
    grep -q "not found" "$log" && status=1
  done
  note="$(ldd "$bundle"/test_backend_cuda 2>/dev/null | awk '/libcublas.so/ {print $3}')"
  return $status
}

# A GoogleTest binary of the bundle, its results also as XML beside the log.
run_gtest() {
  local log="$1" limit="$2" name="$3" binary="$bundle/$3"
  shift 3
  [[ -x "$binary" ]] || { echo "no $binary" >>"$log"; note="no $name in the bundle"; return 2; }
  run_logged "$log" "$limit" "$binary" --gtest_brief=1 --gtest_output="xml:$log_dir/$(basename "$binary").xml" "$@"
  local status=$?
  note=$(gtest_counts "$log")
  return $status
}

stage_cuda_backend() { run_gtest "$1" "$2" test_backend_cuda; }
# The reference scoring and generation files and the engine's memory on the GPU.
stage_gpu_models() { run_gtest "$1" "$2" test_gpu; }
# The engine tests again with their backend on the GPU (tests/test_backend.h), batch-
# invariant: a request alone, batched, preempted, with a shared prefix, its outputs;
# tokens sampled on the GPU against the host's sampler.
stage_engine() {
  PAGODA_TEST_DEVICE=cuda run_gtest "$1" "$2" test_engine \
    --gtest_filter="${PAGODA_GPU_ENGINE_FILTER:-EngineEquivalence*:EngineApi*:StoriesSession*:ModelRunner*:DeviceSamplingEngine*}"
}

# Random-weight models of given shapes (pagoda mkmodel, on this machine's cores), timed
# with pagoda bench on the GPU: a 1B Llama (F16, Q8_0, Q4_K_M, Q5_K_M) and the default model's shape
# (SmolLM2-135M, Q4_1); then one decode run of the Q4_K_M model with per-op timings.
stage_bench() {
  local log="$1" limit="$2" dir=/tmp/pagoda-bench-models status=0
  [[ -x "$bundle/pagoda" ]] || { note="no pagoda"; return 2; }
  mkdir -p "$dir"
  local llama_1b=(--embd 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --ctx 8192)
  local smollm2=(--embd 576 --layers 30 --heads 9 --kv-heads 3 --ffn 1536 --vocab 49152 --tie-embeddings --ctx 8192)
  run_logged "$log" "$limit" "$bundle/pagoda" mkmodel -o "$dir/llama-1b-f16.gguf" "${llama_1b[@]}" --type f16 || return 1
  run_logged "$log" "$limit" "$bundle/pagoda" mkmodel -o "$dir/llama-1b-q4_k_m.gguf" "${llama_1b[@]}" --type q4_K_M || return 1
  run_logged "$log" "$limit" "$bundle/pagoda" mkmodel -o "$dir/llama-1b-q8_0.gguf" "${llama_1b[@]}" --type q8_0 || return 1
  run_logged "$log" "$limit" "$bundle/pagoda" mkmodel -o "$dir/llama-1b-q5_k_m.gguf" "${llama_1b[@]}" --type q5_K_M || return 1
  run_logged "$log" "$limit" "$bundle/pagoda" mkmodel -o "$dir/smollm2-shape-q4_1.gguf" "${smollm2[@]}" --type q4_1 || return 1
  local model
  for model in llama-1b-f16 llama-1b-q8_0 llama-1b-q4_k_m llama-1b-q5_k_m smollm2-shape-q4_1; do
    run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/$model.gguf" -p 512 -n 128 -r 3 || status=1
  done
  # The decode path's parts side by side, one left out at a time: the staged and the
  # first few-token kernel instead of the piece kernel, the quantized formats on the
  # piece kernel's f32 decoders instead of in integers, no CUDA graphs, no early-starting
  # matmul.
  local variant
  for variant in "PAGODA_CUDA_MATVEC=staged" "PAGODA_CUDA_MATVEC=rowwise" "PAGODA_CUDA_INTEGER_DOTS=0" \
    "PAGODA_CUDA_GRAPHS=0" "PAGODA_CUDA_PDL=0"; do
    local models="llama-1b-f16 llama-1b-q4_k_m"
    [[ $variant == *INTEGER_DOTS* ]] && models="llama-1b-q8_0 llama-1b-q4_k_m"
    for model in $models; do
      echo "variant: $variant" >>"$log"
      run_logged "$log" "$limit" env $variant "$bundle/pagoda" bench --device cuda -m "$dir/$model.gguf" -p 0 -n 128 \
        -r 3 || status=1
    done
  done
  # Prompts with every attention row in a block of its own, and on the scalar attention
  # kernel instead of the one on tensor cores.
  for variant in "PAGODA_CUDA_ATTENTION_GROUPS=0" "PAGODA_CUDA_ATTENTION=scalar"; do
    echo "variant: $variant" >>"$log"
    run_logged "$log" "$limit" env $variant "$bundle/pagoda" bench --device cuda \
      -m "$dir/llama-1b-f16.gguf" -p 512 -n 0 -r 3 || status=1
  done
  for model in llama-1b-f16 llama-1b-q4_k_m; do
    run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/$model.gguf" -p 512 -n 64 -r 1 \
      --profile-ops || status=1
  done
  run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" --concurrency 64 \
    --num-requests 64 --prompt-len 512 --gen-len 128 || status=1
  echo "the same on the scalar attention kernel:" >>"$log"
  run_logged "$log" "$limit" env PAGODA_CUDA_ATTENTION=scalar "$bundle/pagoda" bench --device cuda \
    -m "$dir/llama-1b-f16.gguf" --concurrency 64 --num-requests 64 --prompt-len 512 --gen-len 128 || status=1
  echo "the same, sampled at temperature 0.8 (plain draws on the GPU):" >>"$log"
  run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" --concurrency 64 \
    --num-requests 64 --prompt-len 512 --gen-len 128 --temperature 0.8 || status=1
  local truncated=(--temperature 0.8 --top-k 40 --top-p 0.95 --min-p 0.05)
  echo "the same with top-k 40, top-p 0.95, min-p 0.05 (truncated on the GPU), then on the host:" >>"$log"
  run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" --concurrency 64 \
    --num-requests 64 --prompt-len 512 --gen-len 128 "${truncated[@]}" || status=1
  run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" --concurrency 64 \
    --num-requests 64 --prompt-len 512 --gen-len 128 "${truncated[@]}" --host-sampling || status=1
  echo "per-op profile of the greedy run (op by op, no graphs):" >>"$log"
  run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" --concurrency 64 \
    --num-requests 64 --prompt-len 512 --gen-len 128 --profile-ops || status=1
  note=$(grep -E "^\| .*(pp|tg)[0-9]+ |of the bandwidth|BF16 GEMMs alone|output: " "$log" |
    sed -E 's/ +/ /g' | cut -c1-90 | tr '\n' ';')
  return $status
}

# The end-to-end OpenAI-client tests against `pagoda serve --device cuda` (the bundle's
# tiny model: they check the API, not the text), with the bundled wheels.
stage_serve_e2e() {
  local log="$1" limit="$2" model="$bundle/models/tiny-smollm2.gguf" site=/tmp/pagoda-e2e-site status=0
  [[ -f "$model" && -d "$bundle/wheels" ]] || { note="no tiny model or wheels in the bundle"; return 2; }
  run_logged "$log" "$limit" python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
    "$bundle"/wheels/*.whl || return 1
  local script result passed=0 skipped=0 failed_names=""
  for script in "$bundle"/e2e/*_test.py; do
    # Requests run together give what they give alone only with batch-invariant matmuls
    # on the GPU (the CPU's are always): the test that says so gets them.
    local invariant=false
    [[ "$(basename "$script")" == concurrency_test.py ]] && invariant=true
    PYTHONPATH="$site" PAGODA_DEVICE=cuda PAGODA_BATCH_INVARIANT=$invariant run_logged "$log" "$limit" python3 "$script" \
      --pagoda "$bundle/pagoda" --shared "$bundle/shared" --model "$model"
    result=$?
    # 77: the script skipped itself (what it needs is missing here), as CTest counts it.
    case $result in
      0) passed=$((passed + 1)) ;;
      77) skipped=$((skipped + 1)) ;;
      *) status=1; failed_names="$failed_names $(basename "$script")" ;;
    esac
  done
  note="$passed scripts passed, $skipped skipped${failed_names:+; failed:$failed_names}"
  return $status
}

# Where a test stage failed: its failed tests again (the whole stage where a crash left no
# names) with the decode path's parts turned off one at a time, to say which part a
# failure comes from: the piece kernel (the staged one instead), CUDA graphs, the
# early-starting matmul, attention's row groups, attention on tensor cores, the
# quantized formats in integers.
stage_bisect() {
  local log="$1" limit="$2" entry stage binary filter variant status verdicts=""
  [[ -n "$failed_stages" ]] || { note="no test stage failed"; return 2; }
  for entry in cuda_backend:test_backend_cuda gpu_models:test_gpu engine:test_engine; do
    stage=${entry%%:*}
    binary="$bundle/${entry##*:}"
    [[ " $failed_stages " == *" $stage "* && -x "$binary" ]] || continue
    filter=$(grep -oE '^\[  FAILED  \] [A-Za-z_0-9/]+\.[A-Za-z_0-9/]+' "$log_dir/$stage.log" | awk '{print $4}' |
      sort -u | paste -sd: -)
    if [[ -z "$filter" ]]; then
      filter='*'
      [[ $stage == engine ]] && filter="${PAGODA_GPU_ENGINE_FILTER:-EngineEquivalence*:EngineApi*:StoriesSession*:ModelRunner*}"
    fi
    echo "== $stage: $filter" >>"$log"
    for variant in "PAGODA_CUDA_MATVEC=staged" "PAGODA_CUDA_GRAPHS=0" "PAGODA_CUDA_PDL=0" \
      "PAGODA_CUDA_ATTENTION_GROUPS=0" "PAGODA_CUDA_ATTENTION=scalar" "PAGODA_CUDA_INTEGER_DOTS=0"; do
      echo "variant: $variant" >>"$log"
      run_logged "$log" $((limit / 4)) env $variant PAGODA_TEST_DEVICE=cuda "$binary" --gtest_brief=1 \
        --gtest_filter="$filter"
      status=$?
      verdicts="$verdicts ${stage}[${variant//PAGODA_CUDA_/}]=$([[ $status == 0 ]] && echo pass || echo FAIL)"
    done
  done
  note="$verdicts"
}

# Hardware counters of the decode step's kernels (Nsight Compute, where the machine has
# it): DRAM throughput against peak, achieved occupancy, what warps wait on (stall
# reasons) and the limiters of a layer's kernels at batch 1, op by op (graphs off), on
# the F16 and Q4_K_M models of the bench stage, then decoding attention at 64 requests.
# The clocks are left as they are (--clock-control none).
stage_kernels() {
  local log="$1" limit="$2" dir=/tmp/pagoda-bench-models model ncu_bin status=0
  ncu_bin=$(command -v ncu || find /opt/nvidia /usr/local/cuda* -name ncu -type f 2>/dev/null | head -n 1)
  [[ -n "$ncu_bin" ]] || { note="no ncu on this machine"; return 2; }
  [[ -f "$dir/llama-1b-f16.gguf" && -f "$dir/llama-1b-q4_k_m.gguf" ]] || { note="no bench models"; return 2; }
  for model in llama-1b-f16 llama-1b-q4_k_m; do
    # Past the warm-up passes, 18 launches: about two layers of one decoding step.
    run_logged "$log" "$((limit / 2))" env PAGODA_CUDA_GRAPHS=0 "$ncu_bin" --clock-control none \
      --kernel-name regex:'matmul_pieces_kernel|matmul_int8_kernel|quantize_q8|attention_(mma_)?kernel|add_rms_norm_kernel|rope_kernel' \
      --launch-skip 300 --launch-count 18 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --csv --page details "$bundle/pagoda" bench --device cuda -m "$dir/$model.gguf" -p 0 -n 16 -r 1 ||
      status=1
  done
  # Decoding attention of 64 requests, past the warm-up's and the run's prompt steps (about
  # 4300 launches of the two kernels): its kernel and the merge.
  run_logged "$log" "$((limit / 3))" env PAGODA_CUDA_GRAPHS=0 "$ncu_bin" --clock-control none \
    --kernel-name regex:'attention_(mma_)?kernel|merge_splits_kernel' --launch-skip 4600 --launch-count 4 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --csv --page details \
    "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" --concurrency 64 --num-requests 64 \
    --prompt-len 512 --gen-len 32 || status=1
  note="$(grep -c '"DRAM Throughput"' "$log") kernels measured"
  return $status
}

# pagoda serve --device cuda on the bench stage's 1B F16 model, loaded by pagoda
# bench-serve with 64 clients (512 prompt tokens, 128 generated each).
stage_serve_bench() {
  local log="$1" limit="$2" model=/tmp/pagoda-bench-models/llama-1b-f16.gguf port=18437 pid status
  [[ -f "$model" ]] || { note="no 1B model (the bench stage makes it)"; return 2; }
  "$bundle/pagoda" serve --device cuda -m "$model" --port "$port" >>"$log" 2>&1 &
  pid=$!
  if ! timeout "$((limit / 3))" python3 -c "
import time, urllib.request
while True:
    try:
        urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1); break
    except Exception:
        time.sleep(0.5)" >>"$log" 2>&1; then
    kill "$pid" 2>/dev/null
    note="the server did not answer /health"
    return 1
  fi
  run_logged "$log" "$((limit * 2 / 3))" "$bundle/pagoda" bench-serve --url "http://127.0.0.1:$port" -c 64 -n 64 \
    -p 512 -g 128
  status=$?
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  note=$(grep -E "Output token throughput|Mean TTFT|Mean TPOT" "$log" | sed -E 's/ +/ /g' | tr '\n' ';')
  return $status
}

# Speculative decoding on the GPU: the bench stage's 1B F16 model as target, with its
# Q4_0 copy (pagoda quantize) as draft and with prompt lookup, at 1 and 16 requests, each
# beside the same run without speculation. Random weights: the acceptance says little,
# the cost of a draft pass and of verified rows against a plain step is what it shows.
stage_speculative() {
  local log="$1" limit="$2" dir=/tmp/pagoda-bench-models status=0 requests spec
  [[ -f "$dir/llama-1b-f16.gguf" ]] || { note="no 1B model (the bench stage makes it)"; return 2; }
  run_logged "$log" "$limit" "$bundle/pagoda" quantize "$dir/llama-1b-f16.gguf" "$dir/llama-1b-q4_0.gguf" q4_0 ||
    return 1
  for requests in 1 16; do
    for spec in "" "--speculative-model $dir/llama-1b-q4_0.gguf" "--speculative-ngram"; do
      echo "variant: $requests at a time, ${spec:-no speculation}" >>"$log"
      run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$dir/llama-1b-f16.gguf" \
        --concurrency "$requests" --num-requests "$((2 * requests))" --prompt-len 128 --gen-len 128 $spec || status=1
    done
  done
  note=$(grep -E "^variant: |^output: |^speculative: " "$log" | sed -E 's/ +/ /g' | cut -c1-70 | tr '\n' ';')
  return $status
}

# Prompt lookup on the default model (the speculative decoding issue's figure: at 16
# requests at once, at least 1.2 times the output tokens/s without): the prompts that ask
# to repeat or edit a text, 16 at a time and one at a time, each beside the same run
# without speculation, alternated twice; then the default model as a draft for its F16
# copy, with and without --speculative-p-min. The default model is over what one device run
# may carry beside the bundle: a run before this one leaves it at
# $PAGODA_GPU_DEFAULT_MODEL (or in the bundle's models/), else the stage skips.
stage_prompt_lookup() {
  local log="$1" limit="$2" status=0 round requests spec
  local model="${PAGODA_GPU_DEFAULT_MODEL:-$bundle/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
  [[ -f "$model" ]] || { note="no default model at $model"; return 2; }
  local prompts=() name
  for name in repeat_code edit_paragraph edit_code; do prompts+=(--prompt-file "$bundle/prompts/$name.txt"); done
  for round in 1 2; do
    for requests in 16 1; do
      for spec in "" "--speculative-ngram"; do
        echo "variant: round $round, $requests at a time, ${spec:-no speculation}" >>"$log"
        run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$model" --concurrency "$requests" \
          --num-requests "$((requests == 1 ? 3 : 48))" "${prompts[@]}" --gen-len 256 $spec || status=1
      done
    done
  done
  # The default model drafting for its F16 copy on the same prompts, with and without
  # --speculative-p-min (its chance costs the CPU a pass over the vocabulary per draft
  # row; on the GPU it comes with the token).
  local target=/tmp/pagoda-default-f16.gguf p_min
  run_logged "$log" "$limit" "$bundle/pagoda" quantize "$model" "$target" f16 || return 1
  for round in 1 2; do
    for requests in 1 16; do
      for p_min in 0 0.75; do
        echo "variant: round $round, $requests at a time, F16 copy with the draft, p_min $p_min" >>"$log"
        run_logged "$log" "$limit" "$bundle/pagoda" bench --device cuda -m "$target" --concurrency "$requests" \
          --num-requests "$((requests == 1 ? 3 : 48))" "${prompts[@]}" --gen-len 256 \
          --speculative-model "$model" --speculative-p-min "$p_min" || status=1
      done
    done
  done
  note=$(grep -E "^variant: |^output: |^speculative: " "$log" | sed -E 's/ +/ /g' | cut -c1-70 | tr '\n' ';')
  return $status
}

# pagoda_generate LOG LIMIT OUT ARGS...: pagoda run's text to OUT, its log to LOG.
pagoda_generate() {
  local log="$1" limit="$2" out="$3"
  shift 3
  echo "\$ pagoda run $*" >>"$log"
  timeout --signal=TERM --kill-after=10 "$limit" "$bundle/pagoda" run "$@" >"$out" 2>>"$log"
}

# pagoda itself: greedy stories260K on the CPU must continue the reference text; where
# pagoda run takes --device, the same run on the GPU too.
stage_pagoda_run() {
  local log="$1" limit="$2" model="$bundle/data/models/stories260K.gguf"
  [[ -x "$bundle/pagoda" && -f "$model" ]] || { note="no pagoda or no stories260K.gguf"; return 2; }
  local prompt="Once upon a time" reference cpu_text cuda_text
  local args=(-m "$model" -p "$prompt" -n 32 --temp 0)
  reference=$(cat "$bundle/data/reference/stories260K-greedy.txt" 2>/dev/null)
  pagoda_generate "$log" "$limit" "$log_dir/pagoda_run.cpu.txt" "${args[@]}" -t 4 || return $?
  cpu_text="$prompt$(cat "$log_dir/pagoda_run.cpu.txt")"
  echo "cpu: $cpu_text" >>"$log"
  if [[ -n "$reference" && "$reference" != "$cpu_text"* ]]; then
    note="cpu text differs from the reference"
    return 1
  fi
  note="cpu text as the reference"
  "$bundle/pagoda" run --help 2>/dev/null | grep -q -- "--device" || return 0
  pagoda_generate "$log" "$limit" "$log_dir/pagoda_run.cuda.txt" "${args[@]}" --device cuda || return $?
  cuda_text="$prompt$(cat "$log_dir/pagoda_run.cuda.txt")"
  echo "cuda: $cuda_text" >>"$log"
  if [[ "$cuda_text" == "$cpu_text" ]]; then note="$note; cuda the same"; else note="$note; cuda text differs"; fi
}

# name:timeout_s, in order: what says the GPU computes the host's answers first (the
# engine's tokens sampled on the device among them), then the timings.
all_stages=(gpu:20 libraries:10 cuda_backend:150 gpu_models:90 engine:120 pagoda_run:40 bench:270 bisect:120
  kernels:90 serve_bench:90 serve_e2e:150 speculative:90 prompt_lookup:240)
failed_stages=""

main() {
  setup_environment
  echo "gpu_check: bundle $bundle, logs in $log_dir"
  sed -n '2,4p' "$bundle/MANIFEST.txt"
  local wanted=" ${PAGODA_GPU_STAGES:-} " entry name limit left status t0 seconds result rows=() failed=0
  for entry in "${all_stages[@]}"; do
    name=${entry%%:*}
    limit=${entry##*:}
    [[ "$wanted" == "  " || "$wanted" == *" $name "* ]] || continue
    left=$(( total_budget_s - ($(date +%s) - started) ))
    if (( left < 10 )); then
      rows+=("$(printf '%-14s %-6s %7s  %s' "$name" skip - "no time left")")
      continue
    fi
    (( limit > left )) && limit=$left
    note=""
    local log="$log_dir/$name.log"
    : >"$log"
    echo "gpu_check: $name (at most ${limit}s)"
    t0=$(date +%s)
    "stage_$name" "$log" "$limit"
    status=$?
    seconds=$(( $(date +%s) - t0 ))
    case $status in
      0) result=pass ;;
      2) result=skip; [[ -n "$note" ]] || note="$(tail -n 1 "$log")" ;;
      124 | 137) result=FAIL; note="timed out after ${limit}s${note:+; $note}"; failed=1 ;;
      *) result=FAIL; failed=1 ;;
    esac
    case $result in
      FAIL) failed_stages="$failed_stages $name" ;;
    esac
    if [[ $result == FAIL ]]; then
      echo "--- $name failed: first failures (full log: $log)"
      grep -m 12 -E "FAILED|Failure|error|Error|not found" "$log" || tail -n 12 "$log"
    fi
    rows+=("$(printf '%-14s %-6s %6ss  %s' "$name" "$result" "$seconds" "$note")")
  done
  echo
  printf '%-14s %-6s %7s  %s\n' stage result time note
  printf '%s\n' "${rows[@]}"
  echo "total $(( $(date +%s) - started ))s; logs in $log_dir"
  return $failed
}

main "$@"
