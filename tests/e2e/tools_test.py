"""Tool calling through the official openai client: tool_choice "required" and a named
function return calls whose arguments validate against the function's parameters
(whole, streamed, n=3), a multi-turn conversation through a tool's result, and the 400s
of malformed tools (their `param` names the field).

The calls are well-formed only where the engine applies the grammar's token masks; the
conversation's rendering and the errors hold either way."""

import json

import jsonschema
import openai

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
SERVER = PagodaServer(ARGS, "--max-model-len", "2048", "--max-running", "8")
SEEDS = range(8)

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather",
                                      "description": "The current weather in a city",
                                      "parameters": WEATHER}},
    {"type": "function", "function": {"name": "add", "description": "Adds two integers",
                                      "parameters": ADD}},
]
SCHEMAS = {"get_weather": WEATHER, "add": ADD}
QUESTION = [{"role": "user", "content": "What is the weather like in Paris today?"}]


def client():
    return SERVER.shared_client()


def create(**kwargs):
    kwargs.setdefault("model", SERVER.model_name())
    kwargs.setdefault("messages", QUESTION)
    kwargs.setdefault("tools", TOOLS)
    kwargs.setdefault("max_tokens", 400)
    return client().chat.completions.create(**kwargs)


def check_call(call, what, name=None):
    check(call.id.startswith("call_") and len(call.id) == 29, f"{what}: id {call.id}")
    check_equal(call.type, "function", f"{what} type")
    check(call.function.name in SCHEMAS, f"{what}: name {call.function.name}")
    if name is not None:
        check_equal(call.function.name, name, f"{what} name")
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def test_required_whole_over_many_seeds():
    for seed in SEEDS:
        response = create(tool_choice="required", temperature=1.0, seed=seed)
        choice = response.choices[0]
        check_equal(choice.finish_reason, "tool_calls", f"seed {seed} finish_reason")
        check(choice.message.tool_calls, f"seed {seed}: no calls ({choice.message.content!r})")
        for i, call in enumerate(choice.message.tool_calls):
            check_call(call, f"seed {seed} call {i}")


def test_named_function_n_three():
    response = create(tool_choice={"type": "function", "function": {"name": "add"}},
                      messages=[{"role": "user", "content": "What is 2 plus 40?"}],
                      temperature=1.0, seed=11, n=3)
    check_equal(len(response.choices), 3, "choices")
    for choice in response.choices:
        check_equal(choice.finish_reason, "tool_calls", f"choice {choice.index}")
        check_equal(len(choice.message.tool_calls), 1, f"choice {choice.index} calls")
        check_call(choice.message.tool_calls[0], f"choice {choice.index}", name="add")
        check(choice.message.content is None, f"choice {choice.index}: content")


def test_required_streamed_equals_whole():
    kwargs = dict(tool_choice="required", temperature=1.0, seed=5)
    whole = create(**kwargs).choices[0]
    calls = {}
    finish = None
    for chunk in create(stream=True, **kwargs):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for piece in choice.delta.tool_calls or []:
            if piece.id:
                check(piece.index not in calls, f"call {piece.index} started twice")
                check_equal(piece.function.arguments, "", "first piece's arguments")
                calls[piece.index] = {"name": piece.function.name, "arguments": ""}
            else:
                calls[piece.index]["arguments"] += piece.function.arguments or ""
    check_equal(finish, "tool_calls", "streamed finish_reason")
    check_equal([(c["name"], c["arguments"]) for _, c in sorted(calls.items())],
                [(c.function.name, c.function.arguments) for c in whole.message.tool_calls],
                "streamed calls")


def test_multi_turn_conversation():
    # Sampled: greedy, a random-weight model (the GPU check's tiny one) repeats itself in
    # the calls' free parts (more calls, digits) until max_tokens and never closes them;
    # seed 0 ends in calls, as test_required_whole_over_many_seeds shows.
    first = create(tool_choice="required", temperature=1.0, seed=0).choices[0]
    check(first.message.tool_calls, f"no calls: {first.message.content!r}")
    call = first.message.tool_calls[0]
    messages = QUESTION + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": call.function.name,
                                      "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "22 degrees and sunny"},
    ]
    second = create(messages=messages, tool_choice="auto", temperature=0.0, max_tokens=60)
    choice = second.choices[0]
    check(choice.finish_reason in ("stop", "length", "tool_calls"), choice.finish_reason)
    if choice.finish_reason == "tool_calls":
        for i, again in enumerate(choice.message.tool_calls):
            check_call(again, f"second turn call {i}")
    else:
        check(isinstance(choice.message.content, str), "second turn content")


def test_history_renders_without_tools_in_the_request():
    messages = QUESTION + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_abc", "type": "function",
                         "function": {"name": "get_weather",
                                      "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]},
        {"role": "tool", "tool_call_id": "call_abc", "content": "22 degrees"},
    ]
    response = client().chat.completions.create(model=SERVER.model_name(), messages=messages,
                                                max_tokens=8, temperature=0.0)
    check(response.choices[0].message.tool_calls is None, "no tools, no calls")


def test_other_families_through_their_templates():
    """The Hermes (Qwen 2.5) and Llama 3 syntaxes, by serving the model with those chat
    templates: required calls in each family's syntax come back as tool_calls."""
    import os
    folder = os.path.join(ARGS.shared, "reference", "chat_templates")
    for template in ("Qwen-Qwen2.5-7B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja"):
        path = os.path.join(folder, template)
        if not os.path.isfile(path):
            print(f"     (no {path}: skipped)")
            continue
        with PagodaServer(ARGS, "--max-model-len", "2048", "--chat-template", path) as server:
            tools_client = server.client()
            for seed in SEEDS[:4]:
                response = tools_client.chat.completions.create(
                    model=server.model_name(), messages=QUESTION, tools=TOOLS,
                    tool_choice="required", parallel_tool_calls=False, temperature=1.0,
                    seed=seed, max_tokens=200)
                choice = response.choices[0]
                what = f"{template} seed {seed}"
                check_equal(choice.finish_reason, "tool_calls", f"{what} finish_reason")
                check_equal(len(choice.message.tool_calls), 1, f"{what} calls")
                check_call(choice.message.tool_calls[0], what)


def expect_bad_request(param, message, **kwargs):
    try:
        create(**kwargs)
    except openai.BadRequestError as error:
        check_equal(error.param, param, "param")
        body = error.body if isinstance(error.body, dict) else {}
        check_equal(body.get("message"), message, "message")
        return
    raise AssertionError(f"expected a 400 on {param}")


def test_malformed_tools_are_400s():
    expect_bad_request("tools[1].function.name",
                       "Invalid 'tools[1].function.name': string does not match pattern. "
                       "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                       tools=[TOOLS[0], {"type": "function", "function": {"name": "bad name"}}])
    expect_bad_request("tools[1].function.name",
                       "Invalid 'tools[1].function.name': the function name 'get_weather' is "
                       "already used by tools[0].",
                       tools=[TOOLS[0], TOOLS[0]])
    expect_bad_request("tool_choice",
                       "Invalid value for 'tool_choice': no function named 'nope' was given in "
                       "'tools'.",
                       tool_choice={"type": "function", "function": {"name": "nope"}})
    expect_bad_request("tools[0].function.parameters",
                       "Invalid type for 'tools[0].function.parameters': expected an object, "
                       "but got an array instead.",
                       tools=[{"type": "function", "function": {"name": "f", "parameters": []}}])


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_malformed_tools_are_400s,
        test_history_renders_without_tools_in_the_request,
        test_required_whole_over_many_seeds,
        test_named_function_n_three,
        test_required_streamed_equals_whole,
        test_multi_turn_conversation,
        test_other_families_through_their_templates,
    ])
