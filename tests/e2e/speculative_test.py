"""Speculative decoding through the API: with prompt lookup (--speculative-ngram) or a
draft model (--speculative-model), answers are those the same request gets with
`speculative: false` (greedy, seeded sampling, n > 1, streamed), the proposals show in
/metrics and the access log, and a draft with another vocabulary stops the start with
an error naming the difference."""

import os
import subprocess

from pagoda_server import PagodaServer, check, check_equal, parse_args, run_and_exit

ARGS = parse_args()
STORIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models",
                       "stories260K.gguf")
CODE = """def parse_config(path):
    settings = {}
    with open(path) as f:
        for line in f:
            key, value = line.split("=", 1)
            settings[key.strip()] = value.strip()
    return settings
"""
MESSAGES = [{"role": "user", "content": "Repeat this code exactly:\n\n" + CODE}]


def chat(server, speculative, **kwargs):
    extra = {} if speculative else {"speculative": False}
    return server.client().chat.completions.create(
        model=server.model_name(), messages=MESSAGES, max_tokens=60, extra_body=extra, **kwargs)


def logprobs_of(choice):
    return [(t.token, t.logprob) for t in choice.logprobs.content]


def check_same_answers(server):
    greedy = chat(server, True, temperature=0, logprobs=True)
    plain = chat(server, False, temperature=0, logprobs=True)
    check_equal(greedy.choices[0].message.content, plain.choices[0].message.content,
                "greedy content")
    check_equal(logprobs_of(greedy.choices[0]), logprobs_of(plain.choices[0]), "logprobs")
    check_equal(greedy.usage.completion_tokens, plain.usage.completion_tokens, "tokens")
    return greedy


def spec_metrics(server):
    metrics = server.metrics()
    return (metrics.get("pagoda_spec_decode_num_draft_tokens_total", 0.0),
            metrics.get("pagoda_spec_decode_num_accepted_tokens_total", 0.0),
            metrics.get("pagoda_spec_decode_acceptance_ratio", -1.0))


def test_prompt_lookup():
    # The test model does not repeat the code it is asked to, so the adaptive counts back
    # off after a few proposals, how soon depending on the step times measured: every
    # proposal is verified here, as in test_draft_model, so that the counts are the same
    # on every run.
    with PagodaServer(ARGS, "--max-model-len", "1024", "--speculative-ngram",
                      "--no-speculative-adaptive") as server:
        before = spec_metrics(server)
        check_equal(before[0], 0.0, "no proposals before any request")
        check_same_answers(server)
        proposed, accepted, ratio = spec_metrics(server)
        check(proposed > 10, f"proposals verified: {proposed}")
        check(0 < accepted <= proposed, f"kept {accepted} of {proposed}")
        check(abs(ratio - accepted / proposed) < 1e-9, f"acceptance ratio {ratio}")
        # Prompt lookup keeps each draw of a seeded request as it is without speculation.
        sampled = chat(server, True, temperature=0.8, seed=7, n=2)
        plain = chat(server, False, temperature=0.8, seed=7, n=2)
        check_equal([c.message.content for c in sampled.choices],
                    [c.message.content for c in plain.choices], "seeded n=2")
        stream = server.client().chat.completions.create(
            model=server.model_name(), messages=MESSAGES, max_tokens=60, temperature=0,
            stream=True)
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream
                           if chunk.choices)
        check_equal(streamed, plain_greedy_content(server), "streamed")
        lines = [line for line in server.log().splitlines() if "POST /v1/chat/completions" in line]
        check(any("spec_proposed=" in line and "spec_accepted=" in line for line in lines),
              "the access log counts proposals")
        # A request that opts out verifies nothing.
        before = spec_metrics(server)
        chat(server, False, temperature=0)
        check_equal(spec_metrics(server)[0], before[0], "speculative: false proposes nothing")


def plain_greedy_content(server):
    return chat(server, False, temperature=0).choices[0].message.content


def test_draft_model():
    # The model as its own draft: every greedy proposal is the model's own choice. (Such a
    # draft costs what the model does, so the adaptive counts would rightly never use it:
    # every proposal is verified here.)
    with PagodaServer(ARGS, "--max-model-len", "1024", "--speculative-model", ARGS.model,
                      "--num-speculative-tokens", "4", "--no-speculative-adaptive") as server:
        check_same_answers(server)
        proposed, accepted, _ = spec_metrics(server)
        check(proposed > 10, f"proposals verified: {proposed}")
        check(accepted / proposed > 0.9, f"a draft that is the model keeps {accepted} of {proposed}")
        sampled = chat(server, True, temperature=0.8, seed=3, max_completion_tokens=30)
        check(sampled.choices[0].message.content, "a sampled answer with drawn proposals")


def test_draft_with_another_vocabulary_stops_the_start():
    if not os.path.isfile(STORIES):
        return
    result = subprocess.run([ARGS.pagoda, "serve", "-m", ARGS.model, "--port", "0",
                             "--speculative-model", STORIES], capture_output=True, text=True,
                            timeout=60)
    check(result.returncode != 0, "the server does not start")
    check("the draft model's vocabulary has 512 tokens, the model's 49152" in result.stderr,
          result.stderr[-2000:])


if __name__ == "__main__":
    run_and_exit([
        test_prompt_lookup,
        test_draft_model,
        test_draft_with_another_vocabulary_stops_the_start,
    ])
