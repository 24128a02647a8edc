#include "server/service/api_service_generation.h"

#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "server/openai/api_error.h"
#include "server/service/engine_bridge.h"
#include "server/tools/tool_call_parser.h"

namespace pagoda::server {
namespace {

using Clock = std::chrono::steady_clock;

// nginx's status for a request whose client left before the response: only for the
// metrics and the access log, never sent.
constexpr int kClientClosedRequest = 499;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Keeps a generation in ActiveGenerations while it runs (also when it unwinds by a
// cancellation).
class Registration {
 public:
  Registration(ActiveGenerations& active, std::function<void()> abort)
      : active_(active), key_(active.add(std::move(abort))) {}
  ~Registration() { active_.remove(key_); }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  ActiveGenerations& active_;
  uint64_t key_;
};

// One choice as its outputs come in.
struct ChoiceState {
  CompletionChoiceResult result;
  int32_t text_offset = 0;  // completions streaming: code points sent so far
  bool finished = false;
  std::string error;  // the engine failed it
  Clock::time_point first_token{};
  Clock::time_point last_token{};
  int32_t n_tokens = 0;
  double queued_seconds = -1.0;  // from the engine's first output of the choice
  int64_t n_proposed_tokens = 0;  // speculative decoding: proposals verified, so far
  int64_t n_accepted_tokens = 0;  // of which kept
  std::unique_ptr<tools::ToolCallStreamParser> tool_parser;  // streamed chat with tools
};

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// A whole chat answer read for tool calls: the calls, and the text around them as content
// (none when it is only whitespace).
void read_tool_calls(tools::ToolFamily family, CompletionChoiceResult& result) {
  tools::ParsedOutput parsed = tools::parse_tool_calls(family, result.text);
  if (parsed.calls.empty()) return;
  result.text = is_blank(parsed.content) ? std::string() : std::move(parsed.content);
  for (tools::ToolCall& call : parsed.calls) {
    result.tool_calls.push_back(
        {std::move(call.id), std::move(call.name), std::move(call.arguments)});
  }
  if (result.finish_reason == "stop") result.finish_reason = "tool_calls";
}

class GenerationRun {
 public:
  GenerationRun(Exchange& exchange, GenerationJob job, const GenerationServices& services,
                Clock::time_point arrival)
      : exchange_(exchange),
        job_(std::move(job)),
        services_(services),
        arrival_(arrival),
        bridge_(exchange.executor(),
                [engine = services.engine](engine::RequestId id) { engine->abort(id); }) {
    const size_t n = static_cast<size_t>(job_.options.n);
    choices_.resize(job_.prompts.size() * n);
    for (size_t i = 0; i < choices_.size(); ++i) {
      choices_[i].result.index = static_cast<int>(i);
      if (job_.tool_family && job_.options.stream) {
        choices_[i].tool_parser = std::make_unique<tools::ToolCallStreamParser>(*job_.tool_family);
      }
    }
  }

  asio::awaitable<GenerationOutcome> run() {
    // From here on a client that leaves aborts whatever was submitted.
    exchange_.on_disconnect(bridge_.abort_callback());
    const Registration registration(*services_.active, bridge_.abort_callback());
    if (std::optional<ApiError> error = submit()) {
      bridge_.abort_all();
      co_await drain();
      std::string body = error_body(*error);
      complete(error->status);
      co_await exchange_.respond(static_cast<http::status>(error->status), std::move(body));
    } else if (job_.options.stream) {
      co_await stream();
    } else {
      co_await respond_whole();
    }
    complete(outcome_.status);  // when no reply was written
    co_return outcome_;
  }

 private:
  // Adds every prompt's n completions to the engine.
  std::optional<ApiError> submit() {
    const int32_t n = job_.options.n;
    for (size_t i = 0; i < job_.prompts.size(); ++i) {
      engine::EngineRequest request;
      request.prompt = job_.prompts[i].tokens;
      request.sampling = job_.options.sampling;
      request.stop = job_.options.stop;
      request.stop.max_tokens = job_.prompts[i].max_tokens;
      request.n = n;
      request.priority = job_.options.priority;
      request.speculative = job_.options.speculative;
      outcome_.prompt_tokens += static_cast<int32_t>(request.prompt.size());
      Expected<std::vector<engine::RequestId>> ids =
          services_.engine->add(std::move(request), bridge_.sink());
      if (!ids) return api_error_from_status(ids.status());
      for (size_t j = 0; j < ids->size(); ++j) {
        choice_of_[(*ids)[j]] = static_cast<int>(i * static_cast<size_t>(n) + j);
      }
      bridge_.track(*ids);
    }
    return std::nullopt;
  }

  // Folds one output into its choice; returns the choice (null for an unknown id).
  ChoiceState* apply(engine::RequestOutput& output) {
    const auto it = choice_of_.find(output.id);
    if (it == choice_of_.end()) return nullptr;
    ChoiceState& choice = choices_[static_cast<size_t>(it->second)];
    const Clock::time_point now = Clock::now();
    if (output.queued_seconds >= 0.0) choice.queued_seconds = output.queued_seconds;
    choice.n_proposed_tokens = std::max(choice.n_proposed_tokens, output.n_proposed_tokens);
    choice.n_accepted_tokens = std::max(choice.n_accepted_tokens, output.n_accepted_tokens);
    if (!output.new_tokens.empty()) {
      if (choice.n_tokens == 0) choice.first_token = now;
      choice.last_token = now;
      choice.n_tokens += static_cast<int32_t>(output.new_tokens.size());
      if (outcome_.ttft_seconds < 0.0) outcome_.ttft_seconds = seconds_between(arrival_, now);
    }
    if (!job_.options.stream) {
      choice.result.text += output.text;
      choice.result.tokens.insert(choice.result.tokens.end(), output.new_tokens.begin(),
                                  output.new_tokens.end());
      for (engine::TokenLogprobs& step : output.logprobs)
        choice.result.logprobs.push_back(std::move(step));
    }
    // The prompt counts once: the first completion of each prompt reports its cache hits.
    if (choice.result.index % job_.options.n == 0 && output.n_cached_prompt_tokens > 0) {
      cached_of_prompt_[choice.result.index / job_.options.n] = output.n_cached_prompt_tokens;
    }
    if (output.finish != engine::FinishReason::kNone) {
      choice.finished = true;
      choice.result.finish_reason = std::string(engine::finish_reason_name(output.finish));
      choice.error = std::move(output.error);
      services_.metrics->record_finish(choice.result.finish_reason);
    }
    return &choice;
  }

  // Takes what is left of the outputs (after an abort), keeping the counts right.
  asio::awaitable<void> drain() {
    while (std::optional<engine::RequestOutput> output = co_await bridge_.next()) apply(*output);
  }

  Usage usage() const {
    Usage usage;
    usage.prompt_tokens = outcome_.prompt_tokens;
    for (const ChoiceState& choice : choices_) usage.completion_tokens += choice.n_tokens;
    for (const auto& [prompt, cached] : cached_of_prompt_) usage.cached_prompt_tokens += cached;
    return usage;
  }

  const ChoiceState* failed_choice() const {
    for (const ChoiceState& choice : choices_) {
      if (!choice.error.empty()) return &choice;
    }
    return nullptr;
  }

  std::string whole_body(std::span<const CompletionChoiceResult> results) const {
    if (job_.flavor == ApiFlavor::kChat)
      return chat_completion_body(job_.context, results, usage());
    return completion_body(job_.context, results, usage());
  }

  asio::awaitable<void> respond_whole() {
    co_await drain();
    if (exchange_.disconnected()) {
      complete(kClientClosedRequest);
      co_return;
    }
    if (const ChoiceState* failed = failed_choice()) {
      const ApiError error = internal_error("generation failed: " + failed->error);
      std::string body = error_body(error);
      complete(error.status);
      co_await exchange_.respond(http::status::internal_server_error, std::move(body));
      co_return;
    }
    std::vector<CompletionChoiceResult> results;
    results.reserve(choices_.size());
    for (ChoiceState& choice : choices_) {
      const size_t prompt = static_cast<size_t>(choice.result.index / job_.options.n);
      choice.result.text.insert(0, job_.prompts[prompt].echo);  // completions' echo
      if (job_.tool_family) read_tool_calls(*job_.tool_family, choice.result);
      results.push_back(std::move(choice.result));
    }
    std::string body = whole_body(results);
    complete(200);
    co_await exchange_.respond(http::status::ok, std::move(body));
  }

  // Sends one event unless the client is gone; a refused write aborts the requests.
  asio::awaitable<void> send(std::string payload) {
    if (client_gone_) co_return;
    const bool sent = co_await exchange_.send_event(payload);
    if (!sent) {
      client_gone_ = true;
      bridge_.abort_all();
    }
  }

  // Payloads, built outside the coroutines: GCC 12 mishandles class temporaries (from
  // ?: in particular) inside co_await expressions.
  std::string opening_payload(ChoiceState& choice) {
    const int index = choice.result.index;
    if (job_.flavor == ApiFlavor::kChat) return chat_role_chunk(job_.context, index);
    const std::string& echo = job_.prompts[static_cast<size_t>(index / job_.options.n)].echo;
    if (echo.empty()) return {};
    return completion_text_chunk(job_.context, index, echo, {}, choice.text_offset);
  }
  std::string content_payload(ChoiceState& choice, const engine::RequestOutput& output) {
    if (output.text.empty() && output.logprobs.empty()) return {};
    const int index = choice.result.index;
    if (job_.flavor == ApiFlavor::kChat) {
      return chat_content_chunk(job_.context, index, output.text, output.logprobs);
    }
    return completion_text_chunk(job_.context, index, output.text, output.logprobs,
                                 choice.text_offset);
  }
  // A streamed chat choice with tools: its text through the call parser, as content and
  // tool-call chunks (logprobs ride on the first chunk of content, or an empty one).
  std::vector<std::string> tool_payloads(ChoiceState& choice, const engine::RequestOutput& output) {
    std::vector<tools::StreamDelta> deltas;
    choice.tool_parser->feed(output.text, deltas);
    if (choice.finished) choice.tool_parser->finish(deltas);
    std::vector<std::string> payloads;
    const int index = choice.result.index;
    std::span<const engine::TokenLogprobs> logprobs = output.logprobs;
    for (const tools::StreamDelta& delta : deltas) {
      if (!delta.content.empty()) {
        payloads.push_back(chat_content_chunk(job_.context, index, delta.content, logprobs));
        logprobs = {};
      }
      for (const tools::ToolCallDelta& call : delta.calls) {
        payloads.push_back(chat_tool_call_chunk(
            job_.context, index, ToolCallChunk{call.index, call.id, call.name, call.arguments}));
      }
    }
    if (!logprobs.empty()) payloads.push_back(chat_content_chunk(job_.context, index, "", logprobs));
    if (choice.finished && choice.tool_parser->calls_made() > 0 &&
        choice.result.finish_reason == "stop") {
      choice.result.finish_reason = "tool_calls";
    }
    return payloads;
  }
  std::vector<std::string> output_payloads(ChoiceState& choice,
                                           const engine::RequestOutput& output) {
    if (choice.tool_parser) return tool_payloads(choice, output);
    std::string content = content_payload(choice, output);
    if (content.empty()) return {};
    return {std::move(content)};
  }
  std::string finish_payload(const ChoiceState& choice) const {
    const int index = choice.result.index;
    if (job_.flavor == ApiFlavor::kChat) {
      return chat_finish_chunk(job_.context, index, choice.result.finish_reason);
    }
    return completion_finish_chunk(job_.context, index, choice.result.finish_reason);
  }
  std::string usage_payload() const {
    if (job_.flavor == ApiFlavor::kChat) return chat_usage_chunk(job_.context, usage());
    return completion_usage_chunk(job_.context, usage());
  }

  // The first events of each choice: the assistant role (chat) or the echoed prompt.
  asio::awaitable<void> send_openings() {
    for (ChoiceState& choice : choices_) {
      std::string payload = opening_payload(choice);
      if (!payload.empty()) co_await send(std::move(payload));
    }
  }

  asio::awaitable<void> send_output(ChoiceState& choice, const engine::RequestOutput& output) {
    std::vector<std::string> payloads = output_payloads(choice, output);
    for (std::string& payload : payloads) co_await send(std::move(payload));
    if (!choice.finished) co_return;
    if (!choice.error.empty()) {
      // The engine failed it: an error event (the SDKs raise it), and the rest ends.
      const ApiError error = internal_error("generation failed: " + choice.error);
      std::string payload = error_body(error);
      co_await send(std::move(payload));
      failed_ = true;
      bridge_.abort_all();
      co_return;
    }
    std::string finish = finish_payload(choice);
    co_await send(std::move(finish));
  }

  asio::awaitable<void> stream() {
    const bool began = co_await exchange_.begin_stream();
    if (!began) {
      client_gone_ = true;
      bridge_.abort_all();
    } else {
      co_await send_openings();
    }
    while (std::optional<engine::RequestOutput> output = co_await bridge_.next()) {
      ChoiceState* choice = apply(*output);
      if (choice != nullptr && !failed_) co_await send_output(*choice, *output);
    }
    client_gone_ = client_gone_ || exchange_.disconnected();
    complete(client_gone_ && exchange_.status_sent() == 0 ? kClientClosedRequest : 200);
    if (client_gone_) co_return;
    if (job_.context.include_usage && !failed_) {
      std::string payload = usage_payload();
      co_await send(std::move(payload));
    }
    std::string done = "[DONE]";
    co_await send(std::move(done));
    if (!client_gone_) co_await exchange_.end_stream();
  }

  // The request's metrics and count, once, before its last write.
  void complete(int status) {
    if (completed_) return;
    completed_ = true;
    outcome_.status = status;
    record_metrics();
    services_.count->record(status);
  }

  void record_metrics() {
    ServerMetrics& metrics = *services_.metrics;
    const Usage totals = usage();
    metrics.record_tokens(totals.prompt_tokens, totals.completion_tokens);
    metrics.observe_e2e(seconds_between(arrival_, Clock::now()));
    outcome_.completion_tokens = totals.completion_tokens;
    outcome_.cached_prompt_tokens = totals.cached_prompt_tokens;
    for (const ChoiceState& choice : choices_) {
      outcome_.proposed_tokens += choice.n_proposed_tokens;
      outcome_.accepted_tokens += choice.n_accepted_tokens;
    }
    for (const ChoiceState& choice : choices_) {
      if (choice.queued_seconds >= 0.0) metrics.observe_queue_time(choice.queued_seconds);
      if (choice.n_tokens == 0) continue;
      metrics.observe_ttft(seconds_between(arrival_, choice.first_token));
      if (choice.n_tokens > 1) {
        metrics.observe_tpot(seconds_between(choice.first_token, choice.last_token) /
                             (choice.n_tokens - 1));
      }
    }
  }

  Exchange& exchange_;
  GenerationJob job_;
  GenerationServices services_;
  Clock::time_point arrival_;
  EngineBridge bridge_;
  std::vector<ChoiceState> choices_;                      // [prompts * n], by choice index
  std::unordered_map<engine::RequestId, int> choice_of_;  // engine id -> choice index
  std::unordered_map<size_t, int32_t> cached_of_prompt_;  // prompt -> its cached tokens
  GenerationOutcome outcome_;
  bool client_gone_ = false;  // a write was refused (or the stream never began)
  bool failed_ = false;       // an engine error was sent as an event
  bool completed_ = false;    // complete() ran
};

}  // namespace

uint64_t ActiveGenerations::add(std::function<void()> abort) {
  const std::lock_guard lock(mutex_);
  const uint64_t key = next_key_++;
  aborts_.emplace(key, std::move(abort));
  return key;
}

void ActiveGenerations::remove(uint64_t key) {
  const std::lock_guard lock(mutex_);
  aborts_.erase(key);
}

void ActiveGenerations::abort_all() {
  std::vector<std::function<void()>> aborts;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [key, abort] : aborts_) aborts.push_back(abort);
  }
  for (const std::function<void()>& abort : aborts) abort();
}

std::size_t ActiveGenerations::size() const {
  const std::lock_guard lock(mutex_);
  return aborts_.size();
}

asio::awaitable<GenerationOutcome> run_generation(Exchange& exchange, GenerationJob job,
                                                  GenerationServices services,
                                                  Clock::time_point arrival) {
  GenerationRun run(exchange, std::move(job), services, arrival);
  co_return co_await run.run();
}

}  // namespace pagoda::server
