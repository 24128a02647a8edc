"""Bad requests get OpenAI-shaped errors with the right status: 400 naming the
parameter, malformed JSON, unknown model (404), unknown path (404), wrong method (405),
a prompt longer than the context (400 with both lengths); /v1/models."""

import openai

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
MAX_MODEL_LEN = 256
SERVER = PagodaServer(ARGS, "--max-model-len", str(MAX_MODEL_LEN), "--max-running", "4")


def model_name():
    return SERVER.model_name()


def expect_error(error_class, call):
    try:
        call()
    except error_class as error:
        return error
    raise AssertionError(f"expected {error_class.__name__}")


def check_error_shape(body, status_text=""):
    check(isinstance(body, dict) and set(body) == {"error"}, f"not an error body: {body}")
    error = body["error"]
    check(set(error) >= {"message", "type", "param", "code"}, f"error fields: {error}")
    check(isinstance(error["message"], str) and error["message"], "empty message")
    check(isinstance(error["type"], str) and error["type"], "empty type")
    return error


def test_out_of_range_parameter_is_400_naming_it():
    client = SERVER.shared_client()
    error = expect_error(openai.BadRequestError, lambda: client.chat.completions.create(
        model=model_name(), messages=[{"role": "user", "content": "hi"}], temperature=5))
    check_equal(error.status_code, 400, "status")
    check_equal(error.param, "temperature", "param")
    error = expect_error(openai.BadRequestError, lambda: client.completions.create(
        model=model_name(), prompt="hi", max_tokens=0))
    check_equal(error.param, "max_tokens", "param")
    error = expect_error(openai.BadRequestError, lambda: client.chat.completions.create(
        model=model_name(), messages=[{"role": "user", "content": 3}]))
    check_equal(error.param, "messages[0].content", "param")
    status, _, body = SERVER.json("POST", "/v1/completions",
                                  {"model": model_name(), "prompt": "x", "n": "two"})
    check_equal(status, 400, "status")
    check_equal(check_error_shape(body)["param"], "n", "param")


def test_malformed_json_is_400():
    for raw in (b"{", b"not json", b"[1, 2]", b""):
        status, headers, body = SERVER.json("POST", "/v1/chat/completions", raw,
                                            {"Content-Type": "application/json"})
        check_equal(status, 400, f"status for {raw!r}")
        check(headers["content-type"].startswith("application/json"), "content type")
        check_error_shape(body)


def test_unknown_model_is_404():
    client = SERVER.shared_client()
    error = expect_error(openai.NotFoundError, lambda: client.chat.completions.create(
        model="no-such-model", messages=[{"role": "user", "content": "hi"}]))
    check_equal(error.code, "model_not_found", "code")
    check("no-such-model" in error.message, error.message)
    expect_error(openai.NotFoundError, lambda: client.models.retrieve("no-such-model"))


def test_unknown_path_is_404_and_wrong_method_is_405():
    status, _, body = SERVER.json("GET", "/v1/nothing-here")
    check_equal(status, 404, "unknown path")
    check_error_shape(body)
    status, _, body = SERVER.json("POST", "/v1/models", {})
    check_equal(status, 405, "POST /v1/models")
    check_error_shape(body)
    status, headers, body = SERVER.json("GET", "/v1/chat/completions")
    check_equal(status, 405, "GET /v1/chat/completions")
    check_equal(headers.get("allow"), "POST", "Allow header")
    check_error_shape(body)


def test_prompt_longer_than_the_context_names_both_lengths():
    prompt = "hello world " * 200
    status, _, tokens = SERVER.json("POST", "/tokenize", {"prompt": prompt})
    n_tokens = tokens["count"]
    check(n_tokens > MAX_MODEL_LEN, f"prompt of {n_tokens} tokens is not long enough")
    client = SERVER.shared_client()
    error = expect_error(openai.BadRequestError, lambda: client.completions.create(
        model=model_name(), prompt=prompt, max_tokens=4))
    check(str(MAX_MODEL_LEN) in error.message and str(n_tokens) in error.message,
          f"both lengths should be in: {error.message}")
    # A prompt that fits, with max_tokens that does not.
    error = expect_error(openai.BadRequestError, lambda: client.completions.create(
        model=model_name(), prompt="hello", max_tokens=MAX_MODEL_LEN))
    check(str(MAX_MODEL_LEN) in error.message, error.message)
    # The chat form counts the rendered template.
    error = expect_error(openai.BadRequestError, lambda: client.chat.completions.create(
        model=model_name(), messages=[{"role": "user", "content": prompt}], max_tokens=4))
    check(str(MAX_MODEL_LEN) in error.message, error.message)


def test_models_list_and_retrieve():
    client = SERVER.shared_client()
    models = client.models.list().data
    check_equal(len(models), 1, "models")
    model = models[0]
    check_equal(model.object, "model", "object")
    check_equal(client.models.retrieve(model.id).id, model.id, "retrieve")
    status, _, body = SERVER.json("GET", "/v1/models")
    check_equal(body["data"][0]["max_model_len"], MAX_MODEL_LEN, "max_model_len")


def test_tokenize_and_detokenize_round_trip():
    status, _, body = SERVER.json("POST", "/tokenize", {"prompt": "Hello, world!"})
    check_equal(status, 200, "tokenize")
    check_equal(body["count"], len(body["tokens"]), "count")
    check_equal(body["max_model_len"], MAX_MODEL_LEN, "max_model_len")
    status, _, text = SERVER.json("POST", "/detokenize", {"tokens": body["tokens"]})
    check_equal(status, 200, "detokenize")
    check_equal(text["prompt"], "Hello, world!", "round trip")
    status, _, error = SERVER.json("POST", "/detokenize", {"tokens": [10 ** 9]})
    check_equal(status, 400, "token outside the vocabulary")
    check_error_shape(error)


def test_the_server_survives_all_of_it():
    status, _, _ = SERVER.request("GET", "/health")
    check_equal(status, 200, "health after the errors")
    response = SERVER.shared_client().completions.create(model=model_name(), prompt="Hi", max_tokens=2)
    check_equal(len(response.choices), 1, "a normal request still works")


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_out_of_range_parameter_is_400_naming_it,
        test_malformed_json_is_400,
        test_unknown_model_is_404,
        test_unknown_path_is_404_and_wrong_method_is_405,
        test_prompt_longer_than_the_context_names_both_lengths,
        test_models_list_and_retrieve,
        test_tokenize_and_detokenize_round_trip,
        test_the_server_survives_all_of_it,
    ])
