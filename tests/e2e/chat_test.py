"""POST /v1/chat/completions through the official openai client: whole and streamed
responses, usage (and the usage chunk), n=2, stop strings, seeded sampling, logprobs."""

import math

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
SERVER = PagodaServer(ARGS, "--max-model-len", "1024", "--max-running", "8")
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def model_name():
    return SERVER.model_name()


def create(**kwargs):
    kwargs.setdefault("model", model_name())
    kwargs.setdefault("messages", QUESTION)
    return SERVER.shared_client().chat.completions.create(**kwargs)


def prompt_tokens(messages):
    """What /tokenize counts for the conversation rendered with the chat template."""
    status, _, body = SERVER.json("POST", "/tokenize",
                                  {"messages": messages, "add_generation_prompt": True})
    check_equal(status, 200, "/tokenize status")
    return body["count"]


def collect_stream(**kwargs):
    """The chunks of a streamed chat completion, and the text of each choice index."""
    chunks = list(create(stream=True, **kwargs))
    texts = {}
    for chunk in chunks:
        for choice in chunk.choices:
            texts.setdefault(choice.index, "")
            texts[choice.index] += choice.delta.content or ""
    return chunks, texts


def test_whole_response():
    response = create(max_tokens=12, temperature=0)
    check(response.id.startswith("chatcmpl-"), response.id)
    check_equal(response.object, "chat.completion", "object")
    check_equal(response.model, model_name(), "model")
    check(response.created > 1_600_000_000, "created")
    check_equal(len(response.choices), 1, "choices")
    choice = response.choices[0]
    check_equal(choice.index, 0, "index")
    check_equal(choice.message.role, "assistant", "role")
    check(choice.message.content, "empty content")
    check(choice.finish_reason in ("stop", "length"), choice.finish_reason)
    check(choice.logprobs is None, "logprobs not asked for")
    usage = response.usage
    check_equal(usage.prompt_tokens, prompt_tokens(QUESTION), "prompt_tokens")
    check(1 <= usage.completion_tokens <= 12, usage.completion_tokens)
    if choice.finish_reason == "length":
        check_equal(usage.completion_tokens, 12, "completion_tokens at length")
    check_equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, "total")


def test_stream_equals_whole_and_has_usage_chunk():
    whole = create(max_tokens=16, temperature=0)
    chunks, texts = collect_stream(max_tokens=16, temperature=0,
                                   stream_options={"include_usage": True})
    check_equal(texts[0], whole.choices[0].message.content, "streamed text")
    first = chunks[0]
    check_equal(first.object, "chat.completion.chunk", "object")
    check_equal(first.choices[0].delta.role, "assistant", "first delta's role")
    check(all(c.id == first.id and c.created == first.created for c in chunks), "ids differ")
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    check_equal(finishes[-1], whole.choices[0].finish_reason, "finish reason")
    check(all(f is None for f in finishes[:-1]), "finish reason before the end")
    usage_chunk = chunks[-1]
    check_equal(usage_chunk.choices, [], "usage chunk's choices")
    check_equal(usage_chunk.usage.model_dump(), whole.usage.model_dump(), "usage")
    check(all(c.usage is None for c in chunks[:-1]), "usage before the last chunk")


def test_stream_without_usage_has_no_usage_chunk():
    chunks, _ = collect_stream(max_tokens=4, temperature=0)
    check(all(c.choices for c in chunks), "a chunk without choices")
    check(all(c.usage is None for c in chunks), "usage sent unasked")


def test_n_two_whole_and_streamed():
    kwargs = dict(max_tokens=10, temperature=1.0, seed=42, n=2)
    whole = create(logprobs=True, **kwargs)
    check_equal(sorted(c.index for c in whole.choices), [0, 1], "choice indexes")
    check_equal(whole.usage.prompt_tokens, prompt_tokens(QUESTION), "prompt counted once")
    check_equal(whole.usage.completion_tokens,
                sum(len(c.logprobs.content) for c in whole.choices), "tokens of both choices")
    by_index = {c.index: c.message.content for c in whole.choices}
    _, texts = collect_stream(**kwargs)
    check_equal(texts, by_index, "streamed choices")
    # Choice i samples with seed + i: choice 1 is what a single request with seed 43 gives.
    single = create(max_tokens=10, temperature=1.0, seed=43)
    check_equal(by_index[1], single.choices[0].message.content, "choice 1 = seed 43")


def test_stop_string_ends_the_text_before_it():
    free = create(max_tokens=24, temperature=0).choices[0].message.content
    check(len(free) >= 12, f"need a longer greedy text: {free!r}")
    stop = free[8:11]
    expected = free[:free.index(stop)]
    response = create(max_tokens=24, temperature=0, stop=[stop, "never-seen-stop"])
    check_equal(response.choices[0].message.content, expected, "text before the stop string")
    check_equal(response.choices[0].finish_reason, "stop", "finish reason")
    _, texts = collect_stream(max_tokens=24, temperature=0, stop=stop)
    check_equal(texts[0], expected, "streamed text before the stop string")


def test_seed_reproducibility():
    kwargs = dict(max_tokens=16, temperature=1.0, top_p=1.0)
    first = create(seed=1234, **kwargs).choices[0].message.content
    second = create(seed=1234, **kwargs).choices[0].message.content
    check_equal(second, first, "same seed")
    others = {create(seed=s, **kwargs).choices[0].message.content for s in (1, 2, 3)}
    check(len(others | {first}) > 1, "four seeds gave the same text")


def test_logprobs_with_top_logprobs():
    response = create(max_tokens=8, temperature=0, logprobs=True, top_logprobs=3)
    content = response.choices[0].logprobs.content
    check_equal(len(content), response.usage.completion_tokens, "one entry per token")
    for entry in content:
        check_equal(len(entry.top_logprobs), 3, "top_logprobs")
        check(entry.logprob <= 0.0 and math.isfinite(entry.logprob), entry.logprob)
        tops = [t.logprob for t in entry.top_logprobs]
        check_equal(tops, sorted(tops, reverse=True), "top_logprobs order")
        # Greedy picks the most likely token (no bias or penalty here).
        check(abs(entry.logprob - tops[0]) < 1e-6, "greedy token is not the most likely")
        check_equal(entry.token, entry.top_logprobs[0].token, "greedy token text")
        check_equal(bytes(entry.bytes), entry.token.encode("utf-8"), "bytes")
    text = "".join(entry.token for entry in content)
    check_equal(text.replace(" ", ""),
                response.choices[0].message.content.replace(" ", ""), "tokens' text")
    # Streamed chunks carry the same log-probabilities.
    chunks, _ = collect_stream(max_tokens=8, temperature=0, logprobs=True, top_logprobs=3)
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs
                for e in c.choices[0].logprobs.content]
    check_equal([(e.token, round(e.logprob, 5)) for e in streamed],
                [(e.token, round(e.logprob, 5)) for e in content], "streamed logprobs")


def test_system_message_and_content_parts():
    messages = [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": [{"type": "text", "text": "Name a colour."}]},
    ]
    response = create(messages=messages, max_tokens=6, temperature=0)
    check_equal(response.usage.prompt_tokens, prompt_tokens(messages), "prompt_tokens")
    joined = [messages[0], {"role": "user", "content": "Name a colour."}]
    same = create(messages=joined, max_tokens=6, temperature=0)
    check_equal(response.choices[0].message.content, same.choices[0].message.content,
                "a list of one text part equals the string")


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_whole_response,
        test_stream_equals_whole_and_has_usage_chunk,
        test_stream_without_usage_has_no_usage_chunk,
        test_n_two_whole_and_streamed,
        test_stop_string_ends_the_text_before_it,
        test_seed_reproducibility,
        test_logprobs_with_top_logprobs,
        test_system_message_and_content_parts,
    ])
