"""`pagoda bench`: the serving benchmark's report (--concurrency) counts exactly the
measured requests (not its warm-up), prefix sharing shows in it, and bad sizes are
refused; tests run at a context depth (-d) when asked; a tgN test reports its roofline (weight bytes per token, the share of the
measured bandwidth) and, with --profile, where a token's time went. Speed is not
asserted here: the figures are the benchmark's to print. The backend is the one
PAGODA_DEVICE picks (the GPU check runs this on CUDA, with a smaller model than CTest's)."""

import json
import os
import re
import subprocess

from pagoda_server import check, check_equal, parse_args, run_and_exit

ARGS = parse_args()

# How each backend measures the bandwidth the roofline divides by (the CPU's on -t 2).
BANDWIDTH_METHODS = {"CPU": "streaming read of 1 GiB, 2 threads", "CUDA": "1 GiB device copy, read + write"}


def bench(*flags):
    """Runs the concurrency benchmark on 2 threads; returns (exit status, stdout, stderr)."""
    command = [ARGS.pagoda, "bench", "-m", ARGS.model, "-t", "2", "--json", *map(str, flags)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def report(*flags):
    status, out, err = bench(*flags)
    check_equal(status, 0, f"exit status (stderr: {err})")
    return json.loads(out)


def model_shape():
    """(layers, the gate matrix's type, its input and output sizes) of the model, as
    `pagoda inspect` lists them."""
    done = subprocess.run([ARGS.pagoda, "inspect", ARGS.model], capture_output=True, text=True, timeout=60)
    check_equal(done.returncode, 0, f"inspect exit status (stderr: {done.stderr})")
    layers = re.search(r"^ *\d+ +\S+\.block_count +\S+ +(\d+)$", done.stdout, re.M)
    gate = re.search(r"^ *\d+ +blk\.0\.ffn_gate\.weight +(\S+) +\[(\d+), (\d+)\]", done.stdout, re.M)
    check(layers and gate, "no block count or blk.0.ffn_gate.weight in pagoda inspect's listing")
    return int(layers[1]), gate[1], int(gate[2]), int(gate[3])


def gate_up_row(backend, type_name, n_in, n_ff):
    """The profile's row of a layer's gate and up matmuls for one token: the CUDA backend
    names the pair with the SwiGLU it fuses in, the CPU backend the pair alone."""
    if backend == "CUDA":
        return f"matmul {type_name} {n_in}->{n_ff}+{n_ff} n=1 swiglu"
    return f"matmul {type_name} {n_in}x[{n_ff},{n_ff}]"


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


def test_generation_reports_its_roofline_and_profile():
    status, out, err = bench("-p", 0, "-n", 8, "-r", 1, "--profile")
    check_equal(status, 0, f"exit status (stderr: {err})")
    results = json.loads(out)
    check_equal(len(results), 1, "tests")
    tg = results[0]
    check_equal(tg["test"], "tg8", "test")
    backend = tg["backends"]
    device = os.environ.get("PAGODA_DEVICE", "auto").lower()
    if device != "auto":
        check_equal(backend, device.split(":")[0].upper(), "backend of PAGODA_DEVICE")
    check(backend in BANDWIDTH_METHODS, f"backend {backend!r}")
    # The models this runs on (CTest's default one, the GPU check's tiny one) tie their
    # output projection to the token embedding: a step reads it all.
    check_equal(tg["weight_bytes_per_token"], tg["model_size"], "weight bytes per token")
    gbs = tg["avg_ts"] * tg["weight_bytes_per_token"] / 1e9
    check(abs(tg["weight_gbs"] - gbs) <= 1e-9 * gbs, f"weight GB/s {tg['weight_gbs']} != {gbs}")
    # The bandwidth is probed before the timed run and after it (-r 1): the run is judged
    # by the mean of the two.
    probes = tg["bandwidth_probes_gbs"]
    check_equal(len(probes), 2, f"bandwidth probes {probes}")
    check(all(p > 0 for p in probes), f"bandwidth probes {probes}")
    mean = (probes[0] + probes[1]) / 2
    check(abs(tg["bandwidth_gbs"] - mean) <= 1e-9 * mean, f"bandwidth {tg['bandwidth_gbs']} != {mean}")
    share = tg["weight_gbs"] / tg["bandwidth_gbs"]
    check(abs(tg["bandwidth_share"] - share) <= 1e-9 * share, f"share {tg['bandwidth_share']}")
    check_equal(tg["bandwidth_method"], BANDWIDTH_METHODS[backend], "bandwidth method")
    # 8 tokens are 8 forward passes of the layers: one of each layer's ops per layer and token.
    layers, gate_type, n_in, n_ff = model_shape()
    per_layer = f"{layers:.2f}"
    check("tg8: time per token, 1 runs:" in err, f"stderr: {err}")
    rows = {line[:46].strip(): line[46:].split() for line in err.splitlines()}
    gate_up = gate_up_row(backend, gate_type, n_in, n_ff)
    check_equal(rows.get(gate_up, [None])[0], per_layer, f"{gate_up} calls per token (stderr: {err})")
    check_equal(rows.get("attention", [None])[0], per_layer, "attention calls per token")
    # Each residual add is fused with the norm after it: the first layer's norm and the
    # final one stand alone, and the last layer's second add has no norm after it.
    check_equal(rows.get("rms_norm", [None])[0], "2.00", "norms per token (the first and the last)")
    check_equal(rows.get("add_rms_norm", [None])[0], f"{2 * layers - 1:.2f}",
                "adds fused with norms per token (2 a layer, less one)")
    check_equal(rows.get("add", [None])[0], "1.00", "adds per token (the last layer's second)")
    check("outside the ops (engine step, sampling)" in err, f"stderr: {err}")


def test_sampled_requests_are_counted_alike():
    # With a temperature every request draws with its own seed (seed + i) and still makes
    # gen_len tokens (random prompts: no end of generation).
    r = report("--concurrency", 3, "--num-requests", 4, "--prompt-len", 12, "--gen-len", 6, "--temperature", 0.8)
    check_equal(r["temperature"], 0.800000011920929, "temperature (as an f32)")
    check_equal(r["output_tokens"], 24, "output tokens")
    check_equal(r["engine"]["decoded_tokens"], 4 * 5, "decoded tokens")
    status, out, err = bench("--concurrency", 2, "--temperature", -1)
    check(status != 0, "--temperature -1 was accepted")
    check("--temperature" in err, f"stderr: {err}")


def test_depth_runs_each_test_after_a_filled_context():
    # -d 0,32: every pp and tg test once on an empty cache and once after 32 tokens; the
    # roofline (weights only) is reported for the tg test without a depth alone.
    results = report("-p", 16, "-n", 4, "-d", "0,32", "-r", 1)
    check_equal([r["test"] for r in results], ["pp16", "pp16 @ d32", "tg4", "tg4 @ d32"], "tests")
    check_equal([r["n_depth"] for r in results], [0, 32, 0, 32], "n_depth")
    check_equal([(r["n_prompt"], r["n_gen"]) for r in results], [(16, 0), (16, 0), (0, 4), (0, 4)], "sizes")
    for result in results:
        check(result["avg_ts"] > 0, f"{result['test']}: avg_ts {result['avg_ts']}")
    check("bandwidth_share" in results[2], f"tg4 has no roofline: {results[2]}")
    check("bandwidth_share" not in results[3], f"tg4 @ d32 has a roofline: {results[3]}")
    status, out, err = bench("-p", 16, "-n", 0, "-d", -5)
    check(status != 0, "-d -5 was accepted")
    check("--n-depth" in err, f"stderr: {err}")


def test_bad_sizes_are_refused():
    status, out, err = bench("--concurrency", 2, "--gen-len", 0)
    check(status != 0, "--gen-len 0 was accepted")
    check_equal(out, "", "stdout of a refused run")
    check("--concurrency, --gen-len and --max-batched-tokens must be positive" in err, f"stderr: {err}")


if __name__ == "__main__":
    run_and_exit([
        test_counts_the_measured_requests_only,
        test_shared_prefix_is_computed_once,
        test_generation_reports_its_roofline_and_profile,
        test_sampled_requests_are_counted_alike,
        test_depth_runs_each_test_after_a_filled_context,
        test_bad_sizes_are_refused,
    ])
