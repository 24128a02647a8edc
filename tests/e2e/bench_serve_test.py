"""`pagoda bench-serve` against the real `pagoda serve`: synthetic prompts measured through
the server's /tokenize (its field names, which it checks strictly), so that every prompt
is as long as asked; the report's counts match what the server served."""

import json
import subprocess

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
SERVER = PagodaServer(ARGS, "--max-model-len", "512")


def bench_serve(*flags):
    command = [ARGS.pagoda, "bench-serve", "--url", f"http://127.0.0.1:{SERVER.port}", "--json",
               *map(str, flags)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    check_equal(done.returncode, 0, f"exit status (stderr: {done.stderr})")
    return json.loads(done.stdout), done.stderr


def test_synthetic_prompts_are_measured_by_tokenize():
    # 5 prompts of 48 tokens, 4 generated each (sent with ignore_eos), 2 in flight.
    report, stderr = bench_serve("-c", 2, "-n", 5, "-p", 48, "-g", 4)
    check("token counts are estimates" not in stderr, f"stderr: {stderr}")
    check_equal(report["successful_requests"], 5, "successful requests")
    check_equal(report["total_input_tokens"], 5 * 48, "input tokens (the server's usage)")
    check_equal(report["total_output_tokens"], 5 * 4, "output tokens")


if __name__ == "__main__":
    serve_and_run(SERVER, [test_synthetic_prompts_are_measured_by_tokenize])
