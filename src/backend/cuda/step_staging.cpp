#include "backend/cuda/step_staging.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "backend/cuda/cuda_status.h"

namespace pagoda::backend::cuda {
namespace {

constexpr size_t kRegionAlignment = 256;  // every region starts as a cudaMalloc'd pointer would
constexpr size_t kPartAlignment = 16;     // each array inside the attention batch's region
constexpr size_t kMinTableRoom = 64;      // block-table entries a batch's region has room for at least

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

StepStaging::BatchLayout layout_of(size_t n_sequences, size_t n_tokens, size_t n_table_entries) {
  StepStaging::BatchLayout l;
  l.slot_mapping = align_up(l.sequences + n_sequences * sizeof(DeviceSequence), kPartAlignment);
  l.row_sequence = align_up(l.slot_mapping + n_tokens * sizeof(int64_t), kPartAlignment);
  l.block_tables = align_up(l.row_sequence + n_tokens * sizeof(int32_t), kPartAlignment);
  l.total = l.block_tables + n_table_entries * sizeof(int32_t);
  return l;
}

Status check_slots(std::span<const int64_t> slots, const KvCacheShape& shape, int64_t n_tokens) {
  if (static_cast<int64_t>(slots.size()) != n_tokens) {
    return invalid_argument("attention: needs one KV slot per token (" + std::to_string(slots.size()) +
                            " slots for " + std::to_string(n_tokens) + " tokens)");
  }
  const int64_t n_slots = static_cast<int64_t>(shape.n_blocks) * shape.block_size;
  for (const int64_t slot : slots) {
    if (slot < 0 || slot >= n_slots) {
      return invalid_argument("attention: KV slot " + std::to_string(slot) + " outside the cache's " +
                              std::to_string(n_slots));
    }
  }
  return {};
}

// Blocks of sequence s's table that its context uses, after checking its counts.
Expected<int64_t> check_sequence(const SequenceAttention& s, size_t index, const KvCacheShape& shape,
                                 int64_t n_tokens) {
  const std::string name = "attention: sequence " + std::to_string(index);
  if (s.n_query < 0 || s.query_start < 0 || static_cast<int64_t>(s.query_start) + s.n_query > n_tokens) {
    return invalid_argument(name + ": its rows [" + std::to_string(s.query_start) + ", +" +
                            std::to_string(s.n_query) + ") are outside the batch's " + std::to_string(n_tokens));
  }
  if (s.n_context < s.n_query) {
    return invalid_argument(name + ": context " + std::to_string(s.n_context) + " shorter than its " +
                            std::to_string(s.n_query) + " new tokens");
  }
  const int64_t blocks = (static_cast<int64_t>(s.n_context) + shape.block_size - 1) / shape.block_size;
  if (static_cast<int64_t>(s.block_table.size()) < blocks) {
    return invalid_argument(name + ": block table of " + std::to_string(s.block_table.size()) +
                            " blocks shorter than its context of " + std::to_string(s.n_context) + " tokens");
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const int32_t id = s.block_table[static_cast<size_t>(b)];
    if (id < 0 || id >= shape.n_blocks) {
      return invalid_argument(name + ": block id " + std::to_string(id) + " outside the cache's " +
                              std::to_string(shape.n_blocks));
    }
  }
  return blocks;
}

}  // namespace

Expected<StepStaging> StepStaging::create(size_t bytes, cudaStream_t stream) {
  StepStaging staging;
  PAGODA_ASSIGN_OR_RETURN(staging.pinned_,
                          DeviceMemory::allocate(bytes, MemoryKind::kPinnedHost, "the staging of host inputs"));
  PAGODA_ASSIGN_OR_RETURN(staging.device_,
                          DeviceMemory::allocate(bytes, MemoryKind::kDevice, "the staging of host inputs"));
  staging.stream_ = stream;
  return staging;
}

Expected<const void*> StepStaging::stage(const void* host, size_t bytes) {
  char* pinned = static_cast<char*>(pinned_.data());
  char* device = static_cast<char*>(device_.data());
  if (bytes == 0) return static_cast<const void*>(device);  // never read: any valid pointer
  // Newest first: within a step the input staged last is the likeliest to come again.
  for (auto it = staged_.rbegin(); it != staged_.rend(); ++it) {
    if (it->host == host && it->bytes == bytes && std::memcmp(pinned + it->offset, host, bytes) == 0) {
      return static_cast<const void*>(device + it->offset);
    }
  }
  const size_t offset = align_up(used_, kRegionAlignment);
  if (offset > capacity() || bytes > capacity() - offset) {
    return resource_exhausted("cuda: the staging of this step's host inputs is full (" + std::to_string(bytes) +
                              " bytes asked, " + std::to_string(used_) + " of " + std::to_string(capacity()) +
                              " used): raise CudaBackendOptions::staging_bytes");
  }
  // The pinned region has not been handed out since the last reset, so no pending copy
  // reads it: the host may write it now. upload() copies it.
  std::memcpy(pinned + offset, host, bytes);
  used_ = offset + bytes;
  staged_.push_back({host, bytes, offset});
  return static_cast<const void*>(device + offset);
}

Status StepStaging::upload() {
  if (uploaded_ == used_) return {};
  char* pinned = static_cast<char*>(pinned_.data());
  char* device = static_cast<char*>(device_.data());
  PAGODA_TRY(cuda_status(cudaMemcpyAsync(device + uploaded_, pinned + uploaded_, used_ - uploaded_,
                                         cudaMemcpyHostToDevice, stream_),
                         "cuda: staging the step's host inputs (cudaMemcpyAsync)"));
  uploaded_ = used_;
  return {};
}

Expected<StepStaging::BatchLayout> StepStaging::build_attention(const AttentionBatch& batch,
                                                                const KvCacheShape& shape, int64_t n_tokens,
                                                                DeviceAttentionBatch& counts) {
  if (batch.block_size != shape.block_size) {
    return invalid_argument("attention: the batch's block size " + std::to_string(batch.block_size) +
                            " differs from the cache's " + std::to_string(shape.block_size));
  }
  if (n_tokens < 0 || n_tokens > std::numeric_limits<int32_t>::max() ||
      batch.sequences.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument("attention: batch too large");
  }
  PAGODA_TRY(check_slots(batch.slot_mapping, shape, n_tokens));
  counts.n_sequences = static_cast<int32_t>(batch.sequences.size());
  counts.n_tokens = static_cast<int32_t>(n_tokens);
  counts.block_size = shape.block_size;
  used_blocks_.resize(batch.sequences.size());
  int64_t n_entries = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceAttention& s = batch.sequences[i];
    PAGODA_ASSIGN_OR_RETURN(used_blocks_[i], check_sequence(s, i, shape, n_tokens));
    n_entries += used_blocks_[i];
    if (n_entries > std::numeric_limits<int32_t>::max()) return invalid_argument("attention: block tables too large");
    counts.max_n_query = std::max(counts.max_n_query, s.n_query);
    counts.max_n_context = std::max(counts.max_n_context, s.n_context);
  }
  // Room for a power of two of table entries: a decoding batch's region keeps its size
  // (and the inputs staged after it their places) while its contexts grow.
  const size_t table_room = std::max<size_t>(kMinTableRoom, std::bit_ceil(static_cast<size_t>(n_entries)));
  const BatchLayout layout = layout_of(batch.sequences.size(), static_cast<size_t>(n_tokens), table_room);
  batch_bytes_.assign(layout.total, std::byte{0});
  std::byte* base = batch_bytes_.data();
  auto* sequences = reinterpret_cast<DeviceSequence*>(base + layout.sequences);
  auto* row_sequence = reinterpret_cast<int32_t*>(base + layout.row_sequence);
  auto* tables = reinterpret_cast<int32_t*>(base + layout.block_tables);
  if (n_tokens > 0) std::memcpy(base + layout.slot_mapping, batch.slot_mapping.data(), batch.slot_mapping.size_bytes());
  std::fill(row_sequence, row_sequence + n_tokens, -1);
  int32_t table_offset = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceAttention& s = batch.sequences[i];
    sequences[i] = DeviceSequence{s.query_start, s.n_query, s.n_context, table_offset};
    std::copy_n(s.block_table.begin(), used_blocks_[i], tables + table_offset);
    table_offset += static_cast<int32_t>(used_blocks_[i]);
    for (int32_t r = s.query_start; r < s.query_start + s.n_query; ++r) {
      if (row_sequence[r] >= 0) {
        return invalid_argument("attention: batch row " + std::to_string(r) + " belongs to sequences " +
                                std::to_string(row_sequence[r]) + " and " + std::to_string(i));
      }
      row_sequence[r] = static_cast<int32_t>(i);
    }
  }
  for (int64_t r = 0; r < n_tokens; ++r) {
    if (row_sequence[r] < 0) return invalid_argument("attention: batch row " + std::to_string(r) + " in no sequence");
  }
  return layout;
}

Expected<DeviceAttentionBatch> StepStaging::stage_attention(const AttentionBatch& batch, const KvCacheShape& shape,
                                                            int64_t n_tokens) {
  DeviceAttentionBatch result;
  PAGODA_ASSIGN_OR_RETURN(const BatchLayout layout, build_attention(batch, shape, n_tokens, result));
  // The whole layout is the key: the same batch at the next layer finds its copy.
  PAGODA_ASSIGN_OR_RETURN(const void* region, stage(batch_bytes_.data(), batch_bytes_.size()));
  const char* base = static_cast<const char*>(region);
  result.sequences = reinterpret_cast<const DeviceSequence*>(base + layout.sequences);
  result.slot_mapping = reinterpret_cast<const int64_t*>(base + layout.slot_mapping);
  result.row_sequence = reinterpret_cast<const int32_t*>(base + layout.row_sequence);
  result.block_tables = reinterpret_cast<const int32_t*>(base + layout.block_tables);
  return result;
}

}  // namespace pagoda::backend::cuda
