#pragma once
// Turns one step of the scheduler into one forward pass (DESIGN.md: SchedulerOutput ->
// ModelRunner -> ForwardBatch): the token ids of every scheduled request side by side,
// their positions, each request's block table, the KV slot of every new token, where
// each request's rows start, and which rows need next-token logits (the last row of a
// request that samples). Before the pass it performs the step's copy-on-write block
// copies. Every buffer is sized once for the largest step the limits allow: a step
// allocates nothing.

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "kv/kv_cache_manager.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace pagoda::engine {

// What the runner needs to know of one scheduled request.
struct RunnerSequence {
  int32_t first_position = 0;            // tokens before it already have their K/V in the cache
  int32_t n_tokens = 0;                  // runs tokens [first_position, first_position + n_tokens)
  bool samples = false;                  // its last n_logit_rows rows need logits
  std::span<const int32_t> tokens;       // the request's known tokens (prompt + generated)
  std::span<const int32_t> block_table;  // its KV blocks, token p in block p / block_size
  // Proposals after `tokens` (speculative decoding): position tokens.size() + i holds
  // draft_tokens[i]. Run only when the sequence reaches past its known tokens.
  std::span<const int32_t> draft_tokens = {};
  // Rows at the end of the sequence that need logits when it samples: 1, or one per
  // proposal it verifies and the one after them.
  int32_t n_logit_rows = 1;
  // Its logit rows need only their tokens chosen where the logits are: those
  // `samplings` gives with `adjustments` (Backend::sample_rows; none: each row's greedy
  // token). The step's StepLogits::device_token gives them, and their logits may be left
  // on the device unless that token is kLeftToHost.
  bool token_on_device = false;
  std::span<const RowSampling> samplings = {};        // [n_logit_rows] or empty; first_adjustment not read
  std::span<const LogitAdjustment> adjustments = {};  // the rows' own, which all of them view
};

struct RunnerLimits {
  int32_t max_batch_tokens = 0;  // tokens per step (the model's LoadOptions::max_batch_tokens)
  int32_t max_sequences = 0;     // requests per step
  // Rows needing logits per step (the model's LoadOptions::max_logit_rows): one per
  // sampling request, plus its proposals when speculating. 0 means max_sequences.
  int32_t max_logit_rows = 0;
};

// The next-token logits of a step's sampling requests, in batch order (a request with
// proposals has one row per proposal before its last row). Valid until the runner's
// next step.
class StepLogits {
 public:
  StepLogits(std::span<const float> data, int32_t n_vocab, std::span<const int32_t> device_tokens = {},
             std::span<const RowLogprobs> device_logprobs = {})
      : data_(data), n_vocab_(n_vocab), device_tokens_(device_tokens), device_logprobs_(device_logprobs) {}
  int32_t n_vocab() const { return n_vocab_; }
  int32_t n_rows() const {
    return static_cast<int32_t>(data_.size() / static_cast<size_t>(n_vocab_));
  }
  std::span<const float> row(int32_t i) const { return rows(i, 1); }  // [n_vocab]
  std::span<const float> rows(int32_t first, int32_t count) const {  // [count][n_vocab]
    return data_.subspan(static_cast<size_t>(first) * static_cast<size_t>(n_vocab_),
                         static_cast<size_t>(count) * static_cast<size_t>(n_vocab_));
  }

  // The token chosen where the logits are (its greedy token, core/argmax.h, or its draw,
  // sampling/draw.h: -1 for none) of row i, a row of a sequence that asked for it alone
  // (RunnerSequence::token_on_device), whose logits row(i) may not hold unless it is
  // kLeftToHost (the host's sampler is to take it).
  int32_t device_token(int32_t i) const { return device_tokens_[static_cast<size_t>(i)]; }
  std::span<const int32_t> device_tokens(int32_t first, int32_t count) const {
    return device_tokens_.subspan(static_cast<size_t>(first), static_cast<size_t>(count));
  }
  // The log-probabilities that came with rows [first, first + count)'s tokens, valid
  // where their sampling asked for them (RowSampling::logprobs) and the token is not
  // kLeftToHost; empty when no row of the step asked.
  std::span<const RowLogprobs> device_logprobs(int32_t first, int32_t count) const {
    if (device_logprobs_.empty()) return {};
    return device_logprobs_.subspan(static_cast<size_t>(first), static_cast<size_t>(count));
  }

 private:
  std::span<const float> data_;  // [n_rows][n_vocab]
  int32_t n_vocab_;
  std::span<const int32_t> device_tokens_;  // [n_rows], valid for the token_on_device rows
  std::span<const RowLogprobs> device_logprobs_;  // [n_rows] where a row asked, else empty
};

class ModelRunner {
 public:
  // model, backend and kv must outlive the runner; kv must have the model's shape.
  static Expected<ModelRunner> create(model::Model& model, backend::Backend& backend,
                                      backend::KvStorage& kv, RunnerLimits limits);

  // The forward batch of one step, valid until the next call. Fails, running nothing,
  // when the step exceeds the limits, a sequence runs no token, a sequence's tokens or
  // block table do not cover what it runs, or the batch built fails check_batch
  // (model/batch_check.h): the runner is where every batch is checked.
  Expected<model::ForwardBatch> prepare(std::span<const RunnerSequence> sequences);

  // Performs `copies` in order, then one forward pass over `sequences`. Returns the
  // logits of the sampling sequences, in order. On failure the KV rows this step would
  // have written are unspecified.
  Expected<StepLogits> execute(std::span<const kv::BlockCopy> copies,
                               std::span<const RunnerSequence> sequences);

  // Performs `copies` in order (execute() does it first).
  Status copy_blocks(std::span<const kv::BlockCopy> copies);

  // One pass before any request: a block's worth of tokens (at most the step's limit),
  // with logits for as many rows as a step may ask. The backend then prepares what a
  // first batched pass would otherwise pay for inside a request's step (weights kept
  // repacked, the output head's among them; scratch), so that no request waits on it
  // and no step cost measured for speculation includes it. Writes K/V into block 0
  // only, which no request reads before writing its own: a request's K/V counts once
  // written for it, and no prefix-cache hash is made from this pass.
  Status warm_up();

  const RunnerLimits& limits() const { return limits_; }

 private:
  ModelRunner(model::Model& model, backend::Backend& backend, backend::KvStorage& kv,
              RunnerLimits limits, std::unique_ptr<backend::Buffer> logits_memory);
  Status check(std::span<const RunnerSequence> sequences) const;
  // Appends one sequence's rows (ids, positions, slots) and its attention entry.
  void append(const RunnerSequence& sequence);

  model::Model* model_;
  backend::Backend* backend_;
  backend::KvStorage* kv_;
  RunnerLimits limits_;
  int32_t block_size_;
  int32_t n_vocab_;
  // One step's batch, capacity reserved at creation.
  std::vector<int32_t> token_ids_;  // [<= max_batch_tokens]
  std::vector<int32_t> positions_;  // [<= max_batch_tokens]
  std::vector<int64_t> slots_;      // [<= max_batch_tokens] block_id * block_size + row
  std::vector<backend::SequenceAttention> attention_;  // [<= max_sequences]
  std::vector<int32_t> logit_rows_;                    // [<= max_logit_rows]
  // [logit rows]: 1 for the rows needing only their token chosen where the logits are
  // (RunnerSequence::token_on_device)
  std::vector<uint8_t> token_on_device_;
  // [logit rows]: each token_on_device row's sampling (the default elsewhere: greedy),
  // and the adjustments they index
  std::vector<RowSampling> samplings_;
  std::vector<LogitAdjustment> adjustments_;
  std::vector<int32_t> device_tokens_;  // [max_logit_rows]: the model writes the flagged rows'
  std::vector<RowLogprobs> device_logprobs_;  // [max_logit_rows]: and their log-probabilities, where asked
  std::vector<backend::KvBlockCopy> copies_;  // [copies of the step]; grows to the largest step
  // [max_logit_rows][n_vocab], in memory the backend copies to fastest (pinned on a GPU).
  std::unique_ptr<backend::Buffer> logits_memory_;
  std::span<float> logits_;
};

}  // namespace pagoda::engine
