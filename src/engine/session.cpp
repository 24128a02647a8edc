#include "engine/session.h"

#include <chrono>
#include <utility>

namespace pagoda::engine {
namespace {

using Clock = std::chrono::steady_clock;

// The outputs of the one request in flight, as the engine delivers them.
class CollectingSink final : public RequestSink {
 public:
  void on_output(RequestOutput output) override { outputs.push_back(std::move(output)); }
  std::vector<RequestOutput> outputs;
};

// Folds one output into the result; returns whether the request has finished.
bool take_output(RequestOutput& output, Clock::time_point start, const Session::TextCallback& on_text,
                 GenerationResult& result, bool& first) {
  const Clock::time_point now = Clock::now();
  if (first && !output.new_tokens.empty()) {
    first = false;
    result.timings.prompt_seconds = std::chrono::duration<double>(now - start).count();
    result.timings.n_reused_tokens = output.n_cached_prompt_tokens;
    result.timings.n_prompt_tokens = output.n_prompt_tokens - output.n_cached_prompt_tokens;
  } else if (!first) {
    result.timings.decode_seconds =
        std::chrono::duration<double>(now - start).count() - result.timings.prompt_seconds;
  }
  result.tokens.insert(result.tokens.end(), output.new_tokens.begin(), output.new_tokens.end());
  for (TokenLogprobs& l : output.logprobs) result.logprobs.push_back(std::move(l));
  if (!output.text.empty()) {
    result.text += output.text;
    if (on_text) on_text(output.text);
  }
  result.finish = output.finish;
  return output.finish != FinishReason::kNone;
}

}  // namespace

Expected<std::unique_ptr<Session>> Session::create(model::Model& model, backend::Backend& backend,
                                                   const tokenizer::Tokenizer& tokenizer,
                                                   const EngineConfig& config,
                                                 model::Model* draft_model) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core,
                          EngineCore::create(model, backend, tokenizer, config, draft_model));
  return std::unique_ptr<Session>(new Session(std::move(core)));
}

Expected<GenerationResult> Session::generate(EngineRequest request, const TextCallback& on_text) {
  if (request.n != 1) return invalid_argument("a session runs one completion at a time");
  auto sink = std::make_shared<CollectingSink>();
  PAGODA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Request>> made,
                          core_->make_requests(std::move(request), sink));
  const Clock::time_point start = Clock::now();
  std::vector<Delivery> deliveries;
  core_->admit(std::move(made), deliveries);
  GenerationResult result;
  bool first = true, finished = false, stepped = true;
  std::string error;
  while (!finished) {
    for (Delivery& delivery : deliveries) delivery.sink->on_output(std::move(delivery.output));
    deliveries.clear();
    for (RequestOutput& output : sink->outputs) {
      finished |= take_output(output, start, on_text, result, first);
      if (!output.error.empty()) error = output.error;
    }
    sink->outputs.clear();
    if (finished) break;
    if (!stepped) return internal_error("the engine could not schedule the request");
    stepped = core_->step(deliveries);
  }
  result.timings.n_decoded = static_cast<int32_t>(result.tokens.size()) - 1;
  if (result.finish == FinishReason::kAbort) {
    return internal_error(error.empty() ? std::string("the request was aborted") : error);
  }
  return result;
}

}  // namespace pagoda::engine
