"""A client that leaves, streaming or not, aborts its request: within a second the
engine runs nothing, its KV blocks are back in the pool, and the request counts as
aborted."""

import json
import socket
import time

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
SERVER = PagodaServer(ARGS, "--max-model-len", "1024", "--max-running", "4")
LONG = 900  # tokens the requests would generate if nobody stopped them


def model_name():
    return SERVER.model_name()


def engine_state():
    metrics = SERVER.metrics()
    return (metrics["pagoda_num_requests_running"], metrics["pagoda_num_requests_waiting"],
            metrics["pagoda_kv_cache_usage_ratio"])


def wait_until(predicate, timeout):
    """Seconds until predicate() held, or None if it did not within timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.01)
    return None


def aborted_count():
    return SERVER.metrics().get('pagoda_request_finished_total{finish_reason="abort"}', 0.0)


def test_closing_a_stream_aborts_the_request():
    aborted_before = aborted_count()
    generated_before = SERVER.metrics().get("pagoda_generation_tokens_total", 0.0)
    stream = SERVER.shared_client().completions.create(
        model=model_name(), prompt="Once upon a time", max_tokens=LONG, stream=True,
        extra_body={"ignore_eos": True})
    chunks = iter(stream)
    for _ in range(3):
        next(chunks)
    running, _, usage = engine_state()
    check_equal(running, 1.0, "running while streaming")
    check(usage > 0.0, "KV blocks held while streaming")
    stream.close()
    took = wait_until(lambda: engine_state() == (0.0, 0.0, 0.0), 1.0)
    check(took is not None, f"still running a second after the close: {engine_state()}")
    check(wait_until(lambda: aborted_count() == aborted_before + 1, 1.0) is not None,
          "the request is not counted as aborted")
    generated = SERVER.metrics()["pagoda_generation_tokens_total"] - generated_before
    check(generated < LONG / 2, f"generation went on after the close: {generated} tokens")


def test_closing_the_connection_of_a_whole_request_aborts_it():
    aborted_before = aborted_count()
    body = json.dumps({"model": model_name(), "prompt": "Once upon a time", "max_tokens": LONG,
                       "ignore_eos": True}).encode()
    connection = socket.create_connection(("127.0.0.1", SERVER.port))
    connection.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: application/json\r\n"
                       + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    check(wait_until(lambda: engine_state()[0] == 1.0, 5.0) is not None, "it never ran")
    time.sleep(0.2)  # some tokens in
    connection.close()
    took = wait_until(lambda: engine_state() == (0.0, 0.0, 0.0), 1.0)
    check(took is not None, f"still running a second after the close: {engine_state()}")
    check(wait_until(lambda: aborted_count() == aborted_before + 1, 1.0) is not None,
          "the request is not counted as aborted")


def test_other_requests_are_not_disturbed():
    client = SERVER.shared_client()
    expected = client.completions.create(model=model_name(), prompt="The sky is", max_tokens=12,
                                         temperature=0).choices[0].text
    doomed = client.completions.create(model=model_name(), prompt="Once upon a time",
                                       max_tokens=LONG, stream=True,
                                       extra_body={"ignore_eos": True})
    next(iter(doomed))
    survivor = client.completions.create(model=model_name(), prompt="The sky is", max_tokens=12,
                                         temperature=0, stream=True)
    survivor_chunks = iter(survivor)
    text = next(survivor_chunks).choices[0].text
    doomed.close()
    text += "".join(c.choices[0].text for c in survivor_chunks if c.choices)
    check_equal(text, expected, "the other stream's text")
    check(wait_until(lambda: engine_state() == (0.0, 0.0, 0.0), 1.0) is not None,
          "blocks not returned")


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_closing_a_stream_aborts_the_request,
        test_closing_the_connection_of_a_whole_request_aborts_it,
        test_other_requests_are_not_disturbed,
    ])
