// POST /v1/chat/completions and POST /v1/completions: parse, check the model, build the
// prompts (template, tokens, context check), run the generation.

#include <ctime>
#include <utility>
#include <variant>

#include "server/service/api_service.h"
#include "server/tools/tool_prompt.h"

namespace pagoda::server {
namespace {

std::string_view body_of(const Exchange& exchange) {
  return exchange.request().body();
}

// n completions hold n running slots at once: more than the engine runs is refused
// here, naming the parameter, rather than by the engine.
std::optional<ApiError> check_n(int32_t n, const engine::Engine& engine) {
  const int32_t max_running = engine.config().scheduler.max_running;
  if (n <= max_running) return std::nullopt;
  return bad_request("Invalid 'n': this server runs at most " + std::to_string(max_running) +
                         " completions of a prompt at once, but got " + std::to_string(n) + ".",
                     "n", "invalid_value");
}

// A priority ahead of the default only as far as the operator allows, so that one client
// cannot starve the others.
std::optional<ApiError> check_priority(int32_t priority, int32_t max_boost) {
  if (priority >= -max_boost) return std::nullopt;
  return bad_request("Invalid 'priority': this server lets a request ask to run at most " +
                         std::to_string(max_boost) +
                         " ahead of the default (priority >= " + std::to_string(-max_boost) +
                         "; lower runs first), but got " + std::to_string(priority) + ".",
                     "priority", "invalid_value");
}

}  // namespace

std::optional<ApiError> ApiService::attach_grammar(const OutputFormat& format,
                                                   const ToolsRequest* tools,
                                                   engine::SamplingParams& sampling) {
  ApiResult<std::optional<RequestGrammar>> grammar =
      request_grammar(format, tools, prompts_.tool_family());
  if (!grammar) return std::move(grammar).error();
  if (!grammar->has_value()) return std::nullopt;
  ApiResult<std::shared_ptr<const engine::GrammarConstraint>> constraint =
      grammars_.constraint(**grammar);
  if (!constraint) return std::move(constraint).error();
  sampling.grammar = std::move(*constraint);
  return std::nullopt;
}

ResponseContext ApiService::response_context(std::string_view id_prefix,
                                             const GenerationOptions& options) const {
  ResponseContext context;
  context.id = random_response_id(id_prefix);
  context.created = static_cast<int64_t>(std::time(nullptr));
  context.model = model_.name;
  context.logprobs = options.sampling.logprobs;
  context.include_usage = options.stream && options.include_usage;
  // Alternatives may be control tokens ("<|im_end|>"): show them rather than "".
  context.token_text = [tokenizer = &tokenizer_](int32_t token) {
    return std::string(tokenizer->token_to_piece(token, /*special=*/true));
  };
  return context;
}

asio::awaitable<ApiService::Handled> ApiService::chat_completions(Call& call) {
  Exchange& exchange = call.exchange;
  ApiResult<ChatCompletionRequest> parsed =
      parse_chat_completion_request(body_of(exchange), tokenizer_.n_vocab());
  if (!parsed) co_return co_await respond_error(call, std::move(parsed).error());
  ChatCompletionRequest& request = *parsed;
  std::optional<ApiError> refused = check_model(request.model);
  if (!refused) refused = check_n(request.options.n, engine_);
  if (!refused) refused = check_priority(request.options.priority, options_.max_priority_boost);
  if (refused) co_return co_await respond_error(call, std::move(*refused));

  // Tools: the family's prompt (the template's `tools`, or our system message), and the
  // grammar of the calls (and of the format, if any).
  const tools::ToolFamily family = prompts_.tool_family();
  tools::ToolPrompt tool_prompt =
      tools::prepare_tool_prompt(family, std::move(request.messages), request.tools);
  Json template_kwargs = std::move(request.chat_template_kwargs);
  for (auto& [name, value] : tool_prompt.template_variables.items()) template_kwargs[name] = value;
  ApiResult<std::string> rendered = prompts_.render_chat(
      tool_prompt.messages, request.add_generation_prompt, template_kwargs);
  if (!rendered) co_return co_await respond_error(call, std::move(rendered).error());
  if (std::optional<ApiError> error =
          attach_grammar(request.format, &request.tools, request.options.sampling)) {
    co_return co_await respond_error(call, std::move(*error));
  }
  PromptJob prompt;
  prompt.tokens = prompts_.tokenize_chat(*rendered);
  ApiResult<int32_t> max_tokens =
      resolve_max_tokens(request.options.max_tokens, static_cast<int32_t>(prompt.tokens.size()),
                         model_.max_model_len, "messages");
  if (!max_tokens) co_return co_await respond_error(call, std::move(max_tokens).error());
  prompt.max_tokens = *max_tokens;

  GenerationJob job;
  job.flavor = ApiFlavor::kChat;
  if (request.tools.may_call()) job.tool_family = family;
  job.context = response_context("chatcmpl-", request.options);
  job.prompts.push_back(std::move(prompt));
  job.options = std::move(request.options);
  Handled handled;
  handled.generation =
      co_await run_generation(exchange, std::move(job), generation_services(call), call.arrival);
  handled.status = handled.generation->status;
  if (options_.log_prompts) handled.prompt = std::move(*rendered);
  co_return handled;
}

asio::awaitable<ApiService::Handled> ApiService::completions(Call& call) {
  Exchange& exchange = call.exchange;
  ApiResult<CompletionRequest> parsed =
      parse_completion_request(body_of(exchange), tokenizer_.n_vocab());
  if (!parsed) co_return co_await respond_error(call, std::move(parsed).error());
  CompletionRequest& request = *parsed;
  std::optional<ApiError> refused = check_model(request.model);
  if (!refused) refused = check_n(request.options.n, engine_);
  if (!refused) refused = check_priority(request.options.priority, options_.max_priority_boost);
  if (refused) co_return co_await respond_error(call, std::move(*refused));
  if (std::optional<ApiError> error =
          attach_grammar(request.format, nullptr, request.options.sampling)) {
    co_return co_await respond_error(call, std::move(*error));
  }

  GenerationJob job;
  job.flavor = ApiFlavor::kCompletion;
  for (const PromptInput& input : request.prompts) {
    PromptJob prompt;
    if (const auto* text = std::get_if<std::string>(&input)) {
      prompt.tokens = prompts_.tokenize_text(*text);
    } else {
      prompt.tokens = std::get<std::vector<int32_t>>(input);
    }
    if (prompt.tokens.empty()) {
      ApiError error = bad_request(
          "The prompt is empty, and this model adds no token in front of a prompt: there is "
          "nothing to continue.",
          "prompt");
      co_return co_await respond_error(call, std::move(error));
    }
    ApiResult<int32_t> max_tokens =
        resolve_max_tokens(request.options.max_tokens, static_cast<int32_t>(prompt.tokens.size()),
                           model_.max_model_len, "prompt");
    if (!max_tokens) co_return co_await respond_error(call, std::move(max_tokens).error());
    prompt.max_tokens = *max_tokens;
    if (request.options.echo) prompt.echo = prompts_.prompt_text(input);
    job.prompts.push_back(std::move(prompt));
  }
  job.context = response_context("cmpl-", request.options);
  job.options = std::move(request.options);
  Handled handled;
  if (options_.log_prompts) handled.prompt = prompts_.prompt_text(request.prompts.front());
  handled.generation =
      co_await run_generation(exchange, std::move(job), generation_services(call), call.arrival);
  handled.status = handled.generation->status;
  co_return handled;
}

}  // namespace pagoda::server
