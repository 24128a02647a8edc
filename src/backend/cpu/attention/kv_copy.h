#pragma once
// Copy on write of shared KV blocks on the CPU (see Backend::copy_kv_blocks).

#include <span>

#include "backend/backend.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace pagoda::backend::cpu {

// Copies each block's rows in every layer's K and V arrays, the copies in order within
// each array; the arrays are spread over the pool. Checks every id first: an id outside
// the storage copies nothing and is an error.
Status copy_kv_blocks(ThreadPool& pool, KvStorage& kv, std::span<const KvBlockCopy> copies);

}  // namespace pagoda::backend::cpu
