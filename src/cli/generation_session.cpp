#include "cli/generation_session.h"

#include <cstdio>
#include <utility>

#include "engine/sequence_batch.h"

namespace pagoda::cli {

Expected<std::unique_ptr<GenerationSession>> open_generation_session(const GenerationArgs& args) {
  auto session = std::make_unique<GenerationSession>();
  model::LoadOptions options;
  options.max_batch_tokens = args.batch_size;
  options.max_logit_rows = 1;
  PAGODA_ASSIGN_OR_RETURN(session->loaded, load_model_file(args.model_path, args.threads, options,
                                                           /*with_tokenizer=*/true, args.numerics));
  const model::ModelConfig& config = session->loaded.model->config();
  session->n_ctx = args.context_size(config.n_ctx_train);
  PAGODA_ASSIGN_OR_RETURN(session->kv, session->loaded.backend->allocate_kv(
                                           engine::contiguous_kv_shape(config, session->n_ctx)));
  PAGODA_ASSIGN_OR_RETURN(engine::Generator generator,
                          engine::Generator::create(*session->loaded.model, *session->kv,
                                                    *session->loaded.tokenizer, args.batch_size));
  session->generator.emplace(std::move(generator));
  session->n_ctx = session->generator->context_size();  // whole KV blocks: maybe a little more
  return session;
}

void print_timings(double load_seconds, const engine::GenerationTimings& t) {
  std::fprintf(
      stderr,
      "load %.2f s | prompt %d tokens, %.1f tokens/s | generation %d tokens, %.1f tokens/s\n",
      load_seconds, t.n_prompt_tokens, t.prompt_tokens_per_second(), t.n_decoded,
      t.decode_tokens_per_second());
}

}  // namespace pagoda::cli
