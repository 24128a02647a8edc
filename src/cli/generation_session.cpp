#include "cli/generation_session.h"

#include <cstdio>
#include <utility>

namespace pagoda::cli {

Expected<std::unique_ptr<GenerationSession>> open_generation_session(const GenerationArgs& args) {
  log_to_stderr();
  auto s = std::make_unique<GenerationSession>();
  engine::EngineConfig config;
  config.scheduler.max_batched_tokens = args.batch_size;
  config.scheduler.max_running = 1;
  PAGODA_ASSIGN_OR_RETURN(config.speculative, args.speculative.config());
  PAGODA_ASSIGN_OR_RETURN(s->loaded, load_model_file(args.model_path, args.backend,
                                                     config.load_options(), /*with_tokenizer=*/true));
  config.scheduler.max_model_len = args.context_size(s->loaded.model->config().n_ctx_train);
  if (config.speculative.method == engine::SpeculativeMethod::kDraft) {
    PAGODA_ASSIGN_OR_RETURN(s->draft, load_draft_model(config.speculative.draft_model_path, s->loaded,
                                                       config.draft_load_options()));
  }
  PAGODA_ASSIGN_OR_RETURN(s->session, engine::Session::create(*s->loaded.model, *s->loaded.backend,
                                                              *s->loaded.tokenizer, config,
                                                              s->draft.model.get()));
  s->n_ctx = s->session->config().scheduler.max_model_len;
  PAGODA_ASSIGN_OR_RETURN(s->grammar, load_grammar_constraint(args.grammar, *s->loaded.tokenizer));
  return s;
}

engine::EngineRequest generation_request(const GenerationArgs& args, const GenerationSession& session,
                                         std::vector<int32_t> prompt) {
  engine::EngineRequest request;
  request.prompt = std::move(prompt);
  request.sampling = args.sampling_params();
  request.sampling.grammar = session.grammar;
  request.stop = args.stop_conditions(session.n_ctx);
  return request;
}

void print_timings(double load_seconds, const engine::GenerationTimings& t) {
  std::fprintf(
      stderr,
      "load %.2f s | prompt %d tokens, %.1f tokens/s | generation %d tokens, %.1f tokens/s\n",
      load_seconds, t.n_prompt_tokens, t.prompt_tokens_per_second(), t.n_decoded,
      t.decode_tokens_per_second());
}

void print_speculation(const engine::EngineStats& stats) {
  const engine::SchedulerStats& s = stats.scheduler;
  if (s.n_draft_tokens == 0) return;
  std::fprintf(stderr, "speculative: %lld proposals verified, %lld kept (%.1f%%), %.2f kept per verifying step\n",
               static_cast<long long>(s.n_draft_tokens), static_cast<long long>(s.n_accepted_draft_tokens),
               100.0 * s.acceptance_rate(), s.mean_accepted_length());
}

}  // namespace pagoda::cli
