"""POST /v1/completions through the official openai client: greedy output equal to
`pagoda run`, whole and streamed, echo, several prompts with n (choices prompt-major),
token-id prompts, logprobs, usage."""

import subprocess

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run

ARGS = parse_args()
SERVER = PagodaServer(ARGS, "--max-model-len", "1024", "--max-running", "8")
PROMPT = "The capital of France is"


def model_name():
    return SERVER.model_name()


def create(**kwargs):
    kwargs.setdefault("model", model_name())
    kwargs.setdefault("prompt", PROMPT)
    return SERVER.shared_client().completions.create(**kwargs)


def tokenize(text):
    status, _, body = SERVER.json("POST", "/tokenize", {"prompt": text})
    check_equal(status, 200, "/tokenize status")
    return body["tokens"]


def stream_texts(**kwargs):
    chunks = list(create(stream=True, **kwargs))
    texts = {}
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
    return chunks, texts


def test_greedy_equals_pagoda_run():
    run = subprocess.run([ARGS.pagoda, "run", "-m", ARGS.model, "-p", PROMPT, "-n", "20",
                          "--temp", "0"], capture_output=True, timeout=120, check=True)
    expected = run.stdout.decode("utf-8")
    response = create(max_tokens=20, temperature=0, extra_body={"ignore_eos": True})
    check_equal(response.choices[0].text, expected, "greedy text")
    check_equal(response.usage.completion_tokens, 20, "completion tokens")
    check_equal(response.usage.prompt_tokens, len(tokenize(PROMPT)), "prompt tokens")


def test_whole_response_shape():
    response = create(max_tokens=5, temperature=0)
    check(response.id.startswith("cmpl-"), response.id)
    check_equal(response.object, "text_completion", "object")
    check_equal(response.model, model_name(), "model")
    check_equal(len(response.choices), 1, "choices")
    check_equal(response.choices[0].index, 0, "index")
    check(response.choices[0].finish_reason in ("stop", "length"), "finish reason")
    usage = response.usage
    check_equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, "total")


def test_stream_equals_whole():
    whole = create(max_tokens=16, temperature=0)
    chunks, texts = stream_texts(max_tokens=16, temperature=0,
                                 stream_options={"include_usage": True})
    check_equal(texts[0], whole.choices[0].text, "streamed text")
    check_equal(chunks[-1].choices, [], "usage chunk")
    check_equal(chunks[-1].usage.model_dump(), whole.usage.model_dump(), "usage")
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    check_equal(finishes[-1], whole.choices[0].finish_reason, "finish reason")


def test_echo_puts_the_prompt_first():
    plain = create(max_tokens=6, temperature=0).choices[0].text
    echoed = create(max_tokens=6, temperature=0, echo=True).choices[0].text
    check_equal(echoed, PROMPT + plain, "echoed text")
    _, texts = stream_texts(max_tokens=6, temperature=0, echo=True)
    check_equal(texts[0], PROMPT + plain, "streamed echo")


def test_several_prompts_with_n_are_prompt_major():
    prompts = ["Once upon a time", "The weather today"]
    kwargs = dict(max_tokens=8, temperature=1.0, seed=7)
    response = create(prompt=prompts, n=2, **kwargs)
    check_equal([c.index for c in response.choices], [0, 1, 2, 3], "indexes")
    # Choice i*n + j is completion j of prompt i, sampled with seed + j.
    for i, prompt in enumerate(prompts):
        for j in range(2):
            single = create(prompt=prompt, max_tokens=8, temperature=1.0, seed=7 + j)
            check_equal(response.choices[i * 2 + j].text, single.choices[0].text,
                        f"choice {i * 2 + j}")
    prompt_tokens = sum(len(tokenize(p)) for p in prompts)
    check_equal(response.usage.prompt_tokens, prompt_tokens, "prompt tokens of both prompts")
    _, texts = stream_texts(prompt=prompts, n=2, **kwargs)
    check_equal(texts, {c.index: c.text for c in response.choices}, "streamed choices")


def test_token_id_prompt_equals_text_prompt():
    ids = tokenize(PROMPT)
    by_text = create(max_tokens=8, temperature=0).choices[0].text
    by_ids = create(prompt=ids, max_tokens=8, temperature=0).choices[0].text
    check_equal(by_ids, by_text, "token-id prompt")
    both = create(prompt=[ids, ids], max_tokens=8, temperature=0)
    check_equal([c.text for c in both.choices], [by_text, by_text], "list of id lists")


def test_logprobs():
    response = create(max_tokens=8, temperature=0, logprobs=2,
                      extra_body={"ignore_eos": True})
    choice = response.choices[0]
    logprobs = choice.logprobs
    check_equal(len(logprobs.tokens), 8, "tokens")
    check_equal(len(logprobs.token_logprobs), 8, "token_logprobs")
    check_equal(len(logprobs.top_logprobs), 8, "top_logprobs")
    check_equal("".join(logprobs.tokens).replace(" ", ""), choice.text.replace(" ", ""),
                "tokens' text")
    offsets = logprobs.text_offset
    check_equal(offsets[0], 0, "first offset")
    check(all(a <= b for a, b in zip(offsets, offsets[1:])), "offsets go up")
    for token, logprob, top in zip(logprobs.tokens, logprobs.token_logprobs,
                                   logprobs.top_logprobs):
        check(1 <= len(top) <= 2, top)
        check(abs(logprob - max(top.values())) < 1e-6, "greedy token is the most likely")
        check(token in top, f"{token!r} not in {top}")
    chunks, _ = stream_texts(max_tokens=8, temperature=0, logprobs=2,
                             extra_body={"ignore_eos": True})
    streamed = [c.choices[0].logprobs for c in chunks if c.choices and c.choices[0].logprobs]
    check_equal([t for lp in streamed for t in lp.tokens], logprobs.tokens, "streamed tokens")
    check_equal([o for lp in streamed for o in lp.text_offset], offsets, "streamed offsets")


if __name__ == "__main__":
    serve_and_run(SERVER, [
        test_greedy_equals_pagoda_run,
        test_whole_response_shape,
        test_stream_equals_whole,
        test_echo_puts_the_prompt_first,
        test_several_prompts_with_n_are_prompt_major,
        test_token_id_prompt_equals_text_prompt,
        test_logprobs,
    ])
