"""Structured output through the official openai client: response_format json_schema
from a Pydantic model (chat.completions.parse and .stream) at temperature 1 over many
seeds, whole and streamed, n=3 - every answer parses and validates against the schema -
json_object, vLLM's guided_choice / guided_regex, and the 400s of formats that do not
convert (their `param` names the field).

The answers are valid only where the engine applies the grammar's token masks; the
errors hold either way."""

import json
import re

import jsonschema
import openai
from pydantic import BaseModel, Field

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
SERVER = PagodaServer(ARGS, "--max-model-len", "1024", "--max-running", "8")
SEEDS = range(12)


class City(BaseModel):
    name: str = Field(max_length=24)
    population: int = Field(ge=0, le=100_000_000)
    capital: bool


QUESTION = [{"role": "user", "content": "Describe Paris as JSON with its name, population and "
                                        "whether it is a capital."}]


def client():
    return SERVER.shared_client()


def completions():
    """chat.completions where parse() lives (older clients kept it under beta)."""
    chat = client().chat.completions
    if hasattr(chat, "parse"):
        return chat
    return client().beta.chat.completions


def city_schema():
    """The schema the client sends for City (strict: every property required, no others)."""
    return City.model_json_schema()


def check_city(text, what):
    """`text` is JSON that validates against City's schema; returns it parsed."""
    check(text is not None, f"{what}: no content")
    value = json.loads(text)
    jsonschema.validate(value, city_schema())
    return City.model_validate(value)


def test_parse_whole_over_many_seeds():
    for seed in SEEDS:
        completion = completions().parse(model=SERVER.model_name(), messages=QUESTION,
                                         response_format=City, temperature=1.0, seed=seed,
                                         max_tokens=120)
        choice = completion.choices[0]
        check_equal(choice.finish_reason, "stop", f"seed {seed} finish_reason")
        check(choice.message.parsed is not None, f"seed {seed}: not parsed")
        check_city(choice.message.content, f"seed {seed}")


def test_parse_n_three():
    completion = completions().parse(model=SERVER.model_name(), messages=QUESTION,
                                     response_format=City, temperature=1.0, seed=7, n=3,
                                     max_tokens=120)
    check_equal(len(completion.choices), 3, "choices")
    for choice in completion.choices:
        check_city(choice.message.content, f"choice {choice.index}")
        check(isinstance(choice.message.parsed, City), f"choice {choice.index}: parsed")


def test_stream_over_many_seeds_and_n_three():
    for seed in SEEDS[:6]:
        with completions().stream(model=SERVER.model_name(), messages=QUESTION,
                                  response_format=City, temperature=1.0, seed=seed, n=3,
                                  max_tokens=120) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
        check_equal(len(final.choices), 3, f"seed {seed} choices")
        for choice in final.choices:
            check_city(choice.message.content, f"seed {seed} choice {choice.index}")


def test_streamed_text_equals_whole_text():
    kwargs = dict(model=SERVER.model_name(), messages=QUESTION, temperature=1.0, seed=3,
                  max_tokens=120,
                  response_format={"type": "json_schema",
                                   "json_schema": {"name": "City", "schema": city_schema()}})
    whole = client().chat.completions.create(**kwargs)
    text = "".join(chunk.choices[0].delta.content or ""
                   for chunk in client().chat.completions.create(stream=True, **kwargs)
                   if chunk.choices)
    check_equal(text, whole.choices[0].message.content, "streamed text")
    check_city(text, "streamed")


def test_json_object():
    """Any object: nothing bounds its length, so an answer cut at max_tokens is allowed;
    every finished one is an object, and most finish."""
    finished = 0
    for seed in SEEDS[:6]:
        response = client().chat.completions.create(
            model=SERVER.model_name(), messages=QUESTION, temperature=1.0, seed=seed,
            max_tokens=400, response_format={"type": "json_object"})
        choice = response.choices[0]
        check(choice.message.content.startswith("{"), f"seed {seed}: {choice.message.content!r}")
        if choice.finish_reason == "length":
            continue
        check_equal(choice.finish_reason, "stop", f"seed {seed} finish_reason")
        value = json.loads(choice.message.content)
        check(isinstance(value, dict), f"seed {seed}: not an object")
        finished += 1
    check(finished >= 3, f"only {finished} of 6 answers finished")


def test_guided_choice_and_regex():
    for seed in SEEDS[:4]:
        response = client().completions.create(
            model=SERVER.model_name(), prompt="Is Paris in France? Answer:", temperature=1.0,
            seed=seed, max_tokens=8, extra_body={"guided_choice": ["yes", "no"]})
        check(response.choices[0].text in ("yes", "no"), response.choices[0].text)
        response = client().chat.completions.create(
            model=SERVER.model_name(), messages=QUESTION, temperature=1.0, seed=seed,
            max_tokens=12, extra_body={"guided_regex": "[A-Z][a-z]{1,8} [0-9]{1,3}"})
        text = response.choices[0].message.content
        check(re.fullmatch("[A-Z][a-z]{1,8} [0-9]{1,3}", text), text)


def expect_bad_request(param, message_start, **kwargs):
    kwargs.setdefault("model", SERVER.model_name())
    kwargs.setdefault("messages", QUESTION)
    try:
        client().chat.completions.create(**kwargs)
    except openai.BadRequestError as error:
        check_equal(error.status_code, 400, "status")
        check_equal(error.param, param, "param")
        body = error.body if isinstance(error.body, dict) else {}
        message = body.get("message", str(error))
        check(message.startswith(message_start), message)
        return
    raise AssertionError(f"expected a 400 on {param}")


def test_formats_that_do_not_convert_are_400s():
    expect_bad_request(
        "response_format.json_schema.schema",
        "Invalid 'response_format.json_schema.schema': unsupported JSON Schema keyword",
        response_format={"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "object", "patternProperties": {"a": {}}}}})
    expect_bad_request("guided_grammar", "Invalid 'guided_grammar': the grammar is not valid",
                       extra_body={"guided_grammar": "root ::= undefined-rule"})
    expect_bad_request("guided_regex", "Invalid 'guided_regex': ",
                       extra_body={"guided_regex": "(a)\\1"})
    expect_bad_request("guided_json",
                       "'guided_json' cannot be combined with 'response_format'",
                       response_format={"type": "json_object"},
                       extra_body={"guided_json": {"type": "object"}})
    expect_bad_request("response_format.type", "Invalid value: 'yaml'.",
                       response_format={"type": "yaml"})


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_formats_that_do_not_convert_are_400s,
        test_parse_whole_over_many_seeds,
        test_parse_n_three,
        test_stream_over_many_seeds_and_n_three,
        test_streamed_text_equals_whole_text,
        test_json_object,
        test_guided_choice_and_regex,
    ])
