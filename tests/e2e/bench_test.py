"""`pagoda bench --concurrency`: the serving benchmark's report counts exactly the
measured requests (not its warm-up), prefix sharing shows in it, and bad sizes are
refused. Speed is not asserted here: the figures are the benchmark's to print."""

import json
import subprocess

from pagoda_server import check, check_equal, parse_args, run_and_exit

ARGS = parse_args()


def bench(*flags):
    """Runs the concurrency benchmark on 2 threads; returns (exit status, stdout, stderr)."""
    command = [ARGS.pagoda, "bench", "-m", ARGS.model, "-t", "2", "--json", *map(str, flags)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def report(*flags):
    status, out, err = bench(*flags)
    check_equal(status, 0, f"exit status (stderr: {err})")
    return json.loads(out)


def check_percentiles(figures, what):
    for key in ("p50", "p90", "p99"):
        check(key in figures, f"{what} has no {key}")
    check(0 < figures["p50"] <= figures["p90"] <= figures["p99"], f"{what} percentiles: {figures}")


def test_counts_the_measured_requests_only():
    # 6 requests of 20 prompt tokens (BOS included) and 5 generated, 4 in flight. The
    # warm-up before them (4 requests of 23 + 2) must not show in any count.
    r = report("--concurrency", 4, "--num-requests", 6, "--prompt-len", 20, "--gen-len", 5)
    check_equal(r["requests"], 6, "requests")
    check_equal(r["output_tokens"], 30, "output tokens")
    engine = r["engine"]
    check_equal(engine["prefilled_tokens"], 6 * 20, "prefilled tokens")
    # Each request's first token comes from its prompt's step, the other 4 from decoding.
    check_equal(engine["decoded_tokens"], 6 * 4, "decoded tokens")
    check_equal(engine["prefix_cache_hit_tokens"], 0, "prefix hits (random prompts)")
    check_equal(engine["preemptions"], 0, "preemptions")
    check(r["output_tokens_per_second"] > 0, "throughput")
    check_percentiles(r["ttft_ms"], "ttft_ms")
    check_percentiles(r["e2e_ms"], "e2e_ms")
    check(r["ttft_ms"]["p99"] <= r["e2e_ms"]["p99"], "first token after the end")


def test_shared_prefix_is_computed_once():
    # A 32-token shared prefix is two full blocks of 16: the first request computes them,
    # the other 4 find them cached.
    r = report("--concurrency", 5, "--prompt-len", 8, "--gen-len", 3, "--shared-prefix-len", 32)
    engine = r["engine"]
    check_equal(engine["prefix_cache_hit_tokens"], 4 * 32, "prefix hits")
    check_equal(engine["prefilled_tokens"], 5 * 40 - 4 * 32, "prefilled tokens")


def test_bad_sizes_are_refused():
    status, out, err = bench("--concurrency", 2, "--gen-len", 0)
    check(status != 0, "--gen-len 0 was accepted")
    check_equal(out, "", "stdout of a refused run")
    check("--concurrency, --gen-len and --max-batched-tokens must be positive" in err, f"stderr: {err}")


if __name__ == "__main__":
    run_and_exit([
        test_counts_the_measured_requests_only,
        test_shared_prefix_is_computed_once,
        test_bad_sizes_are_refused,
    ])
