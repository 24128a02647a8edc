"""32 clients streaming at once get exactly what the same requests get one by one,
greedy and with seeded sampling (the engine's batches change nothing)."""

import threading
import time

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
CLIENTS = 32
SERVER = PagodaServer(ARGS, "--max-model-len", "512", "--max-running", str(CLIENTS))
SUBJECTS = ["a dragon", "the sea", "a robot", "winter", "a small town", "the moon",
            "a lost key", "music"]


def model_name():
    return SERVER.model_name()


def requests(sampled):
    """Chat and completion requests, alternating, with different prompts and lengths."""
    out = []
    for i in range(CLIENTS):
        subject = SUBJECTS[i % len(SUBJECTS)]
        params = dict(max_tokens=4 + i % 5)
        params.update(temperature=0.9, seed=1000 + i) if sampled else params.update(temperature=0)
        if i % 2 == 0:
            out.append(("chat", dict(messages=[{"role": "user",
                                                "content": f"Write about {subject}. ({i})"}],
                                     **params)))
        else:
            out.append(("completion", dict(prompt=f"Story {i} about {subject}:", **params)))
    return out


def run_streamed(client, kind, params):
    """The streamed text and finish reason of one request."""
    text, finish = "", None
    if kind == "chat":
        for chunk in client.chat.completions.create(model=model_name(), stream=True, **params):
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
    else:
        for chunk in client.completions.create(model=model_name(), stream=True, **params):
            for choice in chunk.choices:
                text += choice.text
                finish = choice.finish_reason or finish
    return text, finish


def run_all(sampled):
    todo = requests(sampled)
    client = SERVER.client(timeout=120)
    start_time = time.monotonic()
    one_by_one = [run_streamed(client, kind, params) for kind, params in todo]
    sequential_seconds = time.monotonic() - start_time

    results = [None] * CLIENTS
    errors = []
    start = threading.Barrier(CLIENTS)

    def worker(i):
        try:
            start.wait()
            results[i] = run_streamed(client, *todo[i])  # each stream on its own connection
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append((i, repr(error)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    start_time = time.monotonic()
    for thread in threads:
        thread.join(timeout=180)
    print(f"     one by one {sequential_seconds:.1f} s, all at once "
          f"{time.monotonic() - start_time:.1f} s", flush=True)
    check(not errors, f"clients failed: {errors}")
    for i in range(CLIENTS):
        check_equal(results[i], one_by_one[i], f"client {i} ({todo[i][0]})")
    check(all(text for text, _ in one_by_one), "an empty output")


def test_greedy_clients_at_once_equal_one_by_one():
    run_all(sampled=False)


def test_seeded_clients_at_once_equal_one_by_one():
    run_all(sampled=True)


def test_every_request_was_counted():
    metrics = SERVER.metrics()
    check(metrics["pagoda_num_requests_running"] == 0.0, "requests left running")
    served = metrics.get('pagoda_requests_total{endpoint="/v1/completions",status="200"}', 0.0)
    check_equal(served, 4.0 * CLIENTS / 2, "completions served")


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_greedy_clients_at_once_equal_one_by_one,
        test_seeded_clients_at_once_equal_one_by_one,
        test_every_request_was_counted,
    ])
