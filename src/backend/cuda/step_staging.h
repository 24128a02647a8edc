#pragma once
// One step's host inputs of the ops (token ids, positions, the attention batch's block
// tables and KV slots) on their way to the device: copied into a pinned host arena, and
// from there by upload() (one cudaMemcpyAsync on the backend's stream for everything
// staged since the last upload) into a device arena of the same size. Both arenas are
// allocated once; regions are handed out by bumping an offset and all given back at
// reset(), which the backend calls once the stream is idle (synchronize()), so no pending
// copy or kernel still uses them.
//
// The same input is passed many times per forward pass (rope's positions twice per
// layer, the attention batch at every layer): an input whose pointer, size and contents
// equal one staged since the last reset reuses that device copy, so each distinct input
// goes up once per step.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/attention_batch.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/ops.h"
#include "backend/kv_storage.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

class StepStaging {
 public:
  StepStaging() = default;
  // Allocates `bytes` of pinned host memory and `bytes` of device memory; copies go on
  // `stream`.
  static Expected<StepStaging> create(size_t bytes, cudaStream_t stream);

  // Where host[0, bytes) will be on the device once upload() has run (or where an equal
  // input staged earlier is).
  // resource_exhausted when the arenas cannot hold it until the next reset.
  Expected<const void*> stage(const void* host, size_t bytes);
  template <typename T>
  Expected<const T*> stage(std::span<const T> values) {
    PAGODA_ASSIGN_OR_RETURN(const void* device, stage(values.data(), values.size_bytes()));
    return static_cast<const T*>(device);
  }

  // Checks `batch` against the cache's shape and the n_tokens rows of the op (block
  // ids inside [0, n_blocks), slots inside [0, n_blocks * block_size), each sequence's
  // rows inside the batch and its context at least its new tokens and covered by its
  // block table, every row in exactly one sequence), then stages it as one region:
  // sequences, concatenated block tables, slot mapping and each row's sequence. An
  // invalid batch stages nothing.
  Expected<DeviceAttentionBatch> stage_attention(const AttentionBatch& batch, const KvCacheShape& shape,
                                                 int64_t n_tokens);

  // Enqueues the copy of what was staged since the last upload; the ops that read it
  // must be enqueued after.
  Status upload();

  // Gives every region back. Only when nothing pending on the stream reads them.
  void reset() {
    used_ = 0;
    uploaded_ = 0;
    staged_.clear();
  }
  size_t capacity() const { return pinned_.size(); }
  size_t used() const { return used_; }

  // Byte offsets of the arrays of a staged attention batch inside its region, each
  // aligned to 16.
  struct BatchLayout {
    size_t sequences = 0;     // DeviceSequence [n_sequences]
    size_t slot_mapping = 0;  // int64_t [n_tokens]
    size_t row_sequence = 0;  // int32_t [n_tokens]
    size_t block_tables = 0;  // int32_t [room for the blocks each sequence's context uses, in order]
    size_t total = 0;
  };

 private:
  struct Staged {
    const void* host;  // the caller's pointer it was staged from
    size_t bytes;
    size_t offset;     // in both arenas
  };

  // Checks the batch and fills batch_bytes_ with its device layout, and `counts` with
  // its counts and maxima (not its pointers).
  Expected<BatchLayout> build_attention(const AttentionBatch& batch, const KvCacheShape& shape, int64_t n_tokens,
                                        DeviceAttentionBatch& counts);

  DeviceMemory pinned_;  // [capacity] host bytes: what the copies read
  DeviceMemory device_;  // [capacity] device bytes: what the ops read
  cudaStream_t stream_ = nullptr;
  size_t used_ = 0;               // bytes of both arenas handed out since the last reset
  size_t uploaded_ = 0;           // bytes of them whose copy has been enqueued
  std::vector<Staged> staged_;    // since the last reset, in staging order
  std::vector<std::byte> batch_bytes_;  // host scratch: the attention batch's layout
  std::vector<int64_t> used_blocks_;    // host scratch: blocks of each sequence's table in use
};

}  // namespace pagoda::backend::cuda
