#include "server/openai/openai_request.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "server/openai/openai_request_parts.h"

namespace pagoda::server {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// At most `limit` alternatives, and never more than the vocabulary has.
IntegerRange alternatives(int32_t limit, int32_t n_vocab) {
  return {0, std::min<int64_t>(limit, std::max(n_vocab, 0))};
}

// Chat: logprobs is a boolean, top_logprobs in [0, 20] needs it (as vLLM: a positive
// top_logprobs without logprobs is refused, top_logprobs 0 is not).
void read_chat_logprobs(FieldReader& reader, int32_t n_vocab, engine::SamplingParams& sampling) {
  const bool logprobs = reader.boolean("logprobs").value_or(false);
  const int64_t top =
      reader.integer("top_logprobs", alternatives(kMaxTopLogprobs, n_vocab)).value_or(0);
  if (top > 0 && !logprobs) {
    return reader.fail(
        invalid_value("top_logprobs", "'top_logprobs' requires 'logprobs' to be set to true."));
  }
  sampling.logprobs = logprobs;
  sampling.top_logprobs = static_cast<int32_t>(top);
}

// Completions: logprobs is the number of alternatives in [0, 5]; null turns them off.
void read_completion_logprobs(FieldReader& reader, int32_t n_vocab, GenerationOptions& options) {
  if (auto top = reader.integer("logprobs", alternatives(kMaxCompletionLogprobs, n_vocab))) {
    options.sampling.logprobs = true;
    options.sampling.top_logprobs = static_cast<int32_t>(*top);
  }
  options.echo = reader.boolean("echo").value_or(false);
  if (!reader.ok()) return;
  if (options.echo && options.sampling.logprobs) {
    return reader.fail(bad_request(
        "'echo' together with 'logprobs' is not supported: this server does not compute the "
        "log-probabilities of prompt tokens.",
        "echo", "unsupported_parameter"));
  }
  if (reader.find("suffix") != nullptr) {
    return reader.fail(
        bad_request("'suffix' is not supported.", "suffix", "unsupported_parameter"));
  }
}

// Completions' best_of: candidates made to return the n with the highest log-probability
// per token. best_of equal to n returns every candidate, which is what n alone does; more
// candidates than returned are refused rather than ignored (as vLLM's current engine).
void read_best_of(FieldReader& reader, int32_t n) {
  const std::optional<int64_t> best_of = reader.integer("best_of", {1, kMaxChoices});
  if (!reader.ok() || !best_of || *best_of == n) return;
  if (*best_of < n) {
    return reader.fail(invalid_value("best_of", "'best_of' must be at least 'n' (" + std::to_string(n) +
                                                    "), but got " + std::to_string(*best_of) + "."));
  }
  reader.fail(bad_request("'best_of' greater than 'n' is not supported: ask for n completions instead.",
                          "best_of", "unsupported_parameter"));
}

// The parts both endpoints finish with: max_tokens into the stop conditions, and the
// engine's own check of the sampling parameters.
std::optional<ApiError> finish_options(GenerationOptions& options, int32_t n_vocab) {
  if (options.max_tokens) options.stop.max_tokens = *options.max_tokens;
  return check_sampling(options, n_vocab);
}

}  // namespace

ApiResult<ChatCompletionRequest> parse_chat_completion_request(std::string_view body,
                                                               int32_t n_vocab) {
  ApiResult<Json> document = parse_json_object(body);
  if (!document.ok()) return std::move(document).error();
  ChatCompletionRequest request;
  if (auto messages = document->find("messages"); messages != document->end()) {
    request.messages = std::move(*messages);
  }
  if (auto error = normalize_messages(request.messages)) return std::move(*error);

  FieldReader reader(*document);
  GenerationOptions& options = request.options;
  read_shared_options(reader, n_vocab, options, request.model);
  read_chat_logprobs(reader, n_vocab, options.sampling);
  // The newer name wins over the deprecated one.
  if (auto max_tokens = reader.integer("max_completion_tokens", {1, kInt32Max})) {
    options.max_tokens = static_cast<int32_t>(*max_tokens);
  }
  request.add_generation_prompt = reader.boolean("add_generation_prompt").value_or(true);
  if (const Json* kwargs = reader.object("chat_template_kwargs")) {
    request.chat_template_kwargs = *kwargs;
  }
  if (!reader.ok()) return reader.take_error();
  ApiResult<OutputFormat> format = read_output_format(*document);
  if (!format.ok()) return std::move(format).error();
  request.format = std::move(format).value();
  ApiResult<ToolsRequest> tools = read_tools(*document);
  if (!tools.ok()) return std::move(tools).error();
  request.tools = std::move(tools).value();
  if (auto error = finish_options(options, n_vocab)) return std::move(*error);
  return request;
}

ApiResult<CompletionRequest> parse_completion_request(std::string_view body, int32_t n_vocab) {
  ApiResult<Json> document = parse_json_object(body);
  if (!document.ok()) return std::move(document).error();
  CompletionRequest request;
  FieldReader reader(*document);
  ApiResult<std::vector<PromptInput>> prompts = read_prompts(reader.find("prompt"), n_vocab);
  if (!prompts.ok()) return std::move(prompts).error();
  request.prompts = std::move(prompts).value();

  GenerationOptions& options = request.options;
  read_shared_options(reader, n_vocab, options, request.model);
  read_completion_logprobs(reader, n_vocab, options);
  read_best_of(reader, options.n);
  if (!reader.ok()) return reader.take_error();
  ApiResult<OutputFormat> format = read_output_format(*document);
  if (!format.ok()) return std::move(format).error();
  request.format = std::move(format).value();
  if (auto error = finish_options(options, n_vocab)) return std::move(*error);
  return request;
}

ApiResult<int32_t> resolve_max_tokens(std::optional<int32_t> max_tokens, int32_t prompt_tokens,
                                      int32_t max_model_len, std::string_view prompt_param) {
  const std::string noun(prompt_param);
  const std::string limit = "This model's maximum context length is " +
                            std::to_string(max_model_len) + " tokens. However, you requested ";
  if (prompt_tokens >= max_model_len) {
    return bad_request(limit + std::to_string(prompt_tokens) + " tokens in the " + noun +
                           ", which leaves no room for the completion. Please reduce the "
                           "length of the " +
                           noun + ".",
                       noun, "context_length_exceeded");
  }
  if (!max_tokens) return max_model_len - prompt_tokens;
  const int64_t total = int64_t(prompt_tokens) + *max_tokens;
  if (total > max_model_len) {
    return bad_request(limit + std::to_string(total) + " tokens (" + std::to_string(prompt_tokens) +
                           " in the " + noun + ", " + std::to_string(*max_tokens) +
                           " in the completion). Please reduce the length of the " + noun +
                           " or completion.",
                       noun, "context_length_exceeded");
  }
  return *max_tokens;
}

}  // namespace pagoda::server
