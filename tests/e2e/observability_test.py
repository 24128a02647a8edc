"""What operators see: /health (503 "loading" before the model is ready, then 200 with
the engine's state), /metrics in the Prometheus text format with every series the
issue names, X-Request-Id echoed or made, one access line per request, CORS."""

import json
import re
import time

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
ORIGIN = "http://app.example"
SERVER = PagodaServer(ARGS, "--max-model-len", "512", "--cors-origin", ORIGIN)


def test_health_while_loading_then_ready():
    for status, body in SERVER.health_while_loading:  # what the start-up polls saw
        check_equal(status, 503, "status while loading")
        check_equal(json.loads(body)["status"], "loading", "body while loading")
    status, _, health = SERVER.json("GET", "/health")
    check_equal(status, 200, "status")
    check_equal(health["status"], "ok", "status field")
    check_equal(health["model"], SERVER.model_name(), "model")
    for field in ("uptime_s", "requests_served", "running", "waiting", "kv_cache_usage",
                  "prefix_cache_hit_rate", "memory_rss_bytes"):
        check(field in health, f"/health lacks {field}: {health}")
    check(health["uptime_s"] > 0, "uptime")
    check(health["memory_rss_bytes"] > 10 << 20, "resident memory")


def test_health_counts_requests_served():
    before = SERVER.json("GET", "/health")[2]["requests_served"]
    SERVER.shared_client().completions.create(model=SERVER.model_name(), prompt="Hi",
                                              max_tokens=2)
    after = SERVER.json("GET", "/health")[2]["requests_served"]
    check_equal(after - before, 2, "requests served (the completion and the first /health)")


def test_metrics_after_a_request():
    before = SERVER.metrics()
    response = SERVER.shared_client().completions.create(
        model=SERVER.model_name(), prompt="The sky is", max_tokens=5,
        extra_body={"ignore_eos": True})
    after = SERVER.metrics()

    def delta(series):
        return after.get(series, 0.0) - before.get(series, 0.0)

    check_equal(delta('pagoda_requests_total{endpoint="/v1/completions",status="200"}'), 1.0,
                "requests counted by route and status")
    check_equal(delta("pagoda_prompt_tokens_total"), float(response.usage.prompt_tokens),
                "prompt tokens")
    check_equal(delta("pagoda_generation_tokens_total"), 5.0, "generation tokens")
    check_equal(delta('pagoda_request_finished_total{finish_reason="length"}'), 1.0, "finish")
    check_equal(delta("pagoda_time_to_first_token_seconds_count"), 1.0, "ttft observed")
    check_equal(delta("pagoda_time_per_output_token_seconds_count"), 1.0, "tpot observed")
    check_equal(delta("pagoda_e2e_request_latency_seconds_count"), 1.0, "e2e observed")
    check_equal(delta("pagoda_request_queue_time_seconds_count"), 1.0, "queue time observed")
    for gauge in ("pagoda_num_requests_running", "pagoda_num_requests_waiting",
                  "pagoda_kv_cache_usage_ratio", "pagoda_prefix_cache_queries_total",
                  "pagoda_prefix_cache_hits_total", "pagoda_num_preemptions_total"):
        check(gauge in after, f"/metrics lacks {gauge}")
    check_equal(after["pagoda_num_requests_running"], 0.0, "running after the request")


def test_metrics_text_format():
    status, headers, body = SERVER.request("GET", "/metrics")
    check_equal(status, 200, "status")
    check(headers["content-type"].startswith("text/plain"), headers["content-type"])
    text = body.decode()
    check("# TYPE pagoda_time_to_first_token_seconds histogram" in text, "histogram TYPE line")
    check('pagoda_time_to_first_token_seconds_bucket{le="+Inf"}' in text, "+Inf bucket")
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+Inf-]+$')
    for line in text.splitlines():
        if line and not line.startswith("#"):
            check(sample.match(line), f"not a sample line: {line!r}")


def test_request_id_is_echoed_or_made():
    status, headers, _ = SERVER.request("GET", "/v1/models", headers={"X-Request-Id": "abc-123"})
    check_equal(headers.get("x-request-id"), "abc-123", "echoed id")
    _, headers, _ = SERVER.request("GET", "/v1/models")
    made = headers.get("x-request-id", "")
    check(re.fullmatch(r"[0-9a-f]{32}", made), f"made id {made!r}")


def access_lines(request_id, timeout=2.0):
    """The server's log lines naming `request_id`, once there are any (an access line is
    written when its reply is out)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in SERVER.log().splitlines() if request_id in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.01)


def test_one_access_line_per_request():
    SERVER.request("POST", "/v1/completions",
                   {"model": SERVER.model_name(), "prompt": "secret prompt text", "max_tokens": 2},
                   headers={"X-Request-Id": "access-line-check"})
    SERVER.request("GET", "/nowhere", headers={"X-Request-Id": "access-line-404"})
    lines = access_lines("access-line-check")
    check_equal(len(lines), 1, "access lines for the completion")
    line = lines[0]
    for part in ("POST", "/v1/completions", " 200 ", "prompt_tokens=", "completion_tokens=2",
                 "ttft="):
        check(part in line, f"{part!r} not in {line!r}")
    not_found = access_lines("access-line-404")
    check(len(not_found) == 1 and " 404 " in not_found[0], f"404 line: {not_found}")
    check("secret prompt text" not in SERVER.log(), "the prompt was logged without --log-prompts")


def test_cors_headers_and_preflight():
    _, headers, _ = SERVER.request("GET", "/v1/models", headers={"Origin": ORIGIN})
    check_equal(headers.get("access-control-allow-origin"), ORIGIN, "allowed origin")
    _, headers, _ = SERVER.request("GET", "/v1/models", headers={"Origin": "http://evil.example"})
    check("access-control-allow-origin" not in headers, "other origins get no CORS headers")
    status, headers, _ = SERVER.request("OPTIONS", "/v1/chat/completions", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    check_equal(status, 204, "preflight")
    check_equal(headers.get("access-control-allow-origin"), ORIGIN, "preflight origin")
    check("POST" in headers.get("access-control-allow-methods", ""), "allowed methods")
    status, headers, _ = SERVER.request("OPTIONS", "/v1/chat/completions", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    check_equal(status, 400, "preflight from another origin")
    check("access-control-allow-origin" not in headers, "refused preflight has no CORS headers")


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_health_while_loading_then_ready,
        test_health_counts_requests_served,
        test_metrics_after_a_request,
        test_metrics_text_format,
        test_request_id_is_echoed_or_made,
        test_one_access_line_per_request,
        test_cors_headers_and_preflight,
    ])
