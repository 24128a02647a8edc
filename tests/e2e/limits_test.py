"""Limits under pressure, each on a server configured for it: API keys (401), the body
size limit (413), the per-key rate limit (429 + Retry-After), the bounded waiting
queue (503 + Retry-After, nothing started), and request priority (a high-priority request
overtakes queued low-priority ones; how far ahead a request may ask is bounded)."""

import threading
import time

import openai

from pagoda_server import PagodaServer, check, check_equal, parse_args, run_and_exit

ARGS = parse_args()
BASE_FLAGS = ["--max-model-len", "512"]


def model_name(server):
    return server.client().models.list().data[0].id


def expect_error(error_class, call):
    try:
        call()
    except error_class as error:
        return error
    raise AssertionError(f"expected {error_class.__name__}")


def check_error_body(body):
    check(isinstance(body, dict) and "error" in body, f"not an error body: {body}")
    check(set(body["error"]) >= {"message", "type", "param", "code"}, body)


def test_api_keys():
    with PagodaServer(ARGS, *BASE_FLAGS, "--api-key", "key-one", "--api-key", "key-two",
                      api_key="key-two") as server:
        good = server.client()
        check_equal(len(good.models.list().data), 1, "a valid key works")
        check_equal(len(server.client(api_key="key-one").models.list().data), 1, "other key")
        bad = server.client(api_key="wrong-key")
        error = expect_error(openai.AuthenticationError, lambda: bad.completions.create(
            model="m", prompt="hi", max_tokens=1))
        check_equal(error.status_code, 401, "status")
        status, _, body = server.json("GET", "/v1/models")  # no Authorization at all
        check_equal(status, 401, "no key")
        check_error_body(body)
        status, _, _ = server.json("GET", "/v1/models", headers={"Authorization": "key-one"})
        check_equal(status, 401, "a key without 'Bearer '")
        # As vLLM: only /v1 is guarded; probes and metrics stay open.
        check_equal(server.request("GET", "/health")[0], 200, "/health is open")
        check_equal(server.request("GET", "/metrics")[0], 200, "/metrics is open")


def test_body_over_the_limit_is_413():
    with PagodaServer(ARGS, *BASE_FLAGS, "--max-body-bytes", "4096") as server:
        big = {"model": "m", "prompt": "x" * 8000, "max_tokens": 1}
        status, _, body = server.json("POST", "/v1/completions", big)
        check_equal(status, 413, "status")
        check_error_body(body)
        small = {"model": model_name(server), "prompt": "x" * 100, "max_tokens": 1}
        check_equal(server.json("POST", "/v1/completions", small)[0], 200, "under the limit")


def test_rate_limit_is_429_with_retry_after():
    with PagodaServer(ARGS, *BASE_FLAGS, "--api-key", "k", "--rate-limit-rpm", "3",
                      api_key="k") as server:
        headers = {"Authorization": "Bearer k"}
        statuses = [server.request("GET", "/v1/models", headers=headers)[0] for _ in range(3)]
        check_equal(statuses, [200, 200, 200], "within the limit")
        status, response_headers, body = server.json("GET", "/v1/models", headers=headers)
        check_equal(status, 429, "over the limit")
        check_error_body(body)
        retry_after = int(response_headers["retry-after"])
        check(1 <= retry_after <= 60, f"Retry-After {retry_after}")
        error = expect_error(openai.RateLimitError, lambda: server.client().models.list())
        check_equal(error.status_code, 429, "the client sees a RateLimitError")


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_full_queue_is_503_with_retry_after():
    with PagodaServer(ARGS, *BASE_FLAGS, "--max-running", "1", "--max-queued", "1") as server:
        model = model_name(server)
        client = server.client()
        long_request = dict(model=model, prompt="Count:", max_tokens=400,
                            extra_body={"ignore_eos": True})
        running = client.completions.create(stream=True, **long_request)
        next(iter(running))  # it holds the only running slot
        waiting_done = threading.Event()
        waiting_result = {}

        def waiting_client():
            try:
                waiting_result["response"] = client.completions.create(
                    model=model, prompt="Hi", max_tokens=2)
            except Exception as error:  # noqa: BLE001 - reported below
                waiting_result["error"] = error
            waiting_done.set()

        thread = threading.Thread(target=waiting_client)
        thread.start()
        wait_for(lambda: server.json("GET", "/health")[2]["waiting"] == 1, 10, "one waiting")
        before = server.metrics()
        status, headers, body = server.json(
            "POST", "/v1/completions", {"model": model, "prompt": "Hi", "max_tokens": 2})
        check_equal(status, 503, "queue full")
        check_error_body(body)
        check(int(headers["retry-after"]) >= 1, "Retry-After")
        after = server.metrics()
        check_equal(after.get("pagoda_num_requests_waiting"), 1.0, "nothing more queued")
        check_equal(after.get("pagoda_num_requests_running"), 1.0, "nothing more running")
        rejected = 'pagoda_requests_total{endpoint="/v1/completions",status="503"}'
        check_equal(after.get(rejected, 0.0) - before.get(rejected, 0.0), 1.0, "counted 503")
        running.close()  # frees the slot: the waiting request runs
        check(waiting_done.wait(30), "the waiting request did not finish")
        thread.join()
        check("response" in waiting_result, f"waiting request failed: {waiting_result}")


def test_high_priority_overtakes_queued_requests():
    with PagodaServer(ARGS, *BASE_FLAGS, "--max-running", "1", "--max-priority-boost", "5") as server:
        model = model_name(server)
        client = server.client()
        running = client.completions.create(
            stream=True, model=model, prompt="Count:", max_tokens=400,
            extra_body={"ignore_eos": True})
        next(iter(running))  # it holds the only running slot
        finished = []
        lock = threading.Lock()

        def send(name, priority):
            client.completions.create(model=model, prompt="Once upon a time", max_tokens=8,
                                      extra_body={"ignore_eos": True, "priority": priority})
            with lock:
                finished.append(name)

        threads = []
        for i in range(3):  # queued first, low priority (runs later)
            threads.append(threading.Thread(target=send, args=(f"low{i}", 10)))
            threads[-1].start()
            wait_for(lambda: server.json("GET", "/health")[2]["waiting"] == i + 1, 10,
                     f"{i + 1} waiting")
        threads.append(threading.Thread(target=send, args=("high", -5)))
        threads[-1].start()
        wait_for(lambda: server.json("GET", "/health")[2]["waiting"] == 4, 10, "4 waiting")
        running.close()  # frees the slot: the queue runs one at a time, in priority order
        for thread in threads:
            thread.join(60)
        check_equal(finished[0], "high", f"the high-priority request first: {finished}")
        check_equal(sorted(finished[1:]), ["low0", "low1", "low2"], "then the others")

        # Asking for more than the operator allows is a 400 naming the field.
        status, _, body = server.json("POST", "/v1/completions", {
            "model": model, "prompt": "Hi", "max_tokens": 2, "priority": -6})
        check_equal(status, 400, "priority beyond the boost")
        check_equal(body["error"]["param"], "priority", "param")
        status, _, _ = server.json("POST", "/v1/chat/completions", {
            "model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
            "priority": 1000})
        check_equal(status, 200, "asking to run later is always allowed")


if __name__ == "__main__":
    run_and_exit([
        test_api_keys,
        test_body_over_the_limit_is_413,
        test_rate_limit_is_429_with_retry_after,
        test_full_queue_is_503_with_retry_after,
        test_high_priority_overtakes_queued_requests,
    ])
