"""SIGTERM / SIGINT: the server stops accepting, lets running requests finish within
--shutdown-grace, aborts what is left after it, and exits 0."""

import signal
import socket
import sys
import threading
import time

from pagoda_server import PagodaServer, check, check_equal, parse_args, run_and_exit

ARGS = parse_args()
FLAGS = ["--max-model-len", "1024", "--max-running", "4"]


def stream_in_background(server, max_tokens):
    """Starts a streamed completion; returns (first chunk seen event, result dict, thread)."""
    first_chunk = threading.Event()
    result = {"text": "", "finish": None, "chunks": 0}
    client = server.client(timeout=60)
    model = client.models.list().data[0].id

    def run():
        try:
            for chunk in client.completions.create(model=model, prompt="Once upon a time",
                                                   max_tokens=max_tokens, stream=True,
                                                   extra_body={"ignore_eos": True}):
                result["chunks"] += 1
                for choice in chunk.choices:
                    result["text"] += choice.text
                    result["finish"] = choice.finish_reason or result["finish"]
                first_chunk.set()
        except Exception as error:  # noqa: BLE001 - checked by the test
            result["error"] = repr(error)
        first_chunk.set()

    thread = threading.Thread(target=run)
    thread.start()
    return first_chunk, result, thread


def ran_to_its_end(result, max_tokens):
    """A request meant to be cut that finished on its own first: on a fast device the
    whole generation fits in the grace period, and there is nothing left to abort. Says
    so, and the caller skips the checks that need a cut request."""
    if result["finish"] == "length" and "error" not in result:
        print(f"     (the request generated all {max_tokens} tokens before it could be cut: "
              "nothing to abort on this machine)", flush=True)
        return True
    return False


def refuses_connections(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


def test_sigterm_lets_a_running_request_finish():
    server = PagodaServer(ARGS, *FLAGS, "--shutdown-grace", "30").start()
    try:
        first_chunk, result, thread = stream_in_background(server, 48)
        check(first_chunk.wait(30), "no first chunk")
        server.terminate(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not refuses_connections(server.port) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(refuses_connections(server.port), "still accepting after SIGTERM")
        thread.join(timeout=60)
        check("error" not in result, f"the request failed: {result}")
        check_equal(result["finish"], "length", "finish reason")
        code = server.wait_exit(timeout=30)
        check_equal(code, 0, "exit status")
    except Exception:
        print("--- server log ---\n" + server.log(), file=sys.stderr)
        raise
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_requests_past_the_grace_period_are_aborted():
    server = PagodaServer(ARGS, *FLAGS, "--shutdown-grace", "1").start()
    try:
        first_chunk, result, thread = stream_in_background(server, 900)
        check(first_chunk.wait(30), "no first chunk")
        start = time.monotonic()
        server.terminate(signal.SIGINT)
        code = server.wait_exit(timeout=30)
        took = time.monotonic() - start
        thread.join(timeout=30)
        check_equal(code, 0, "exit status")
        check(took < 6, f"took {took:.1f} s to stop with a 1 s grace period")
        check("error" not in result, f"the stream broke instead of ending: {result}")
        if ran_to_its_end(result, 900):
            return
        check_equal(result["finish"], "abort", "finish reason of the cut request")
        check(result["chunks"] < 900, "it ran to the end")
    except Exception:
        print("--- server log ---\n" + server.log(), file=sys.stderr)
        raise
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_a_second_signal_skips_the_grace_period():
    server = PagodaServer(ARGS, *FLAGS, "--shutdown-grace", "60").start()
    try:
        first_chunk, result, thread = stream_in_background(server, 900)
        check(first_chunk.wait(30), "no first chunk")
        start = time.monotonic()
        server.terminate(signal.SIGTERM)
        time.sleep(0.3)
        check(server.process.poll() is None, "the first signal should wait for the request")
        server.terminate(signal.SIGTERM)
        code = server.wait_exit(timeout=30)
        thread.join(timeout=30)
        check_equal(code, 0, "exit status")
        check(time.monotonic() - start < 6, "the second signal did not cut the grace period")
        if ran_to_its_end(result, 900):
            return
        check_equal(result["finish"], "abort", "finish reason of the cut request")
    except Exception:
        print("--- server log ---\n" + server.log(), file=sys.stderr)
        raise
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_idle_server_exits_at_once():
    server = PagodaServer(ARGS, *FLAGS).start()
    start = time.monotonic()
    server.terminate(signal.SIGTERM)
    code = server.wait_exit(timeout=30)
    check_equal(code, 0, "exit status")
    check(time.monotonic() - start < 3, "an idle server should stop at once")


if __name__ == "__main__":
    run_and_exit([
        test_sigterm_lets_a_running_request_finish,
        test_requests_past_the_grace_period_are_aborted,
        test_a_second_signal_skips_the_grace_period,
        test_idle_server_exits_at_once,
    ])
