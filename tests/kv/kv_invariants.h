#pragma once
// The bookkeeping invariants of a KvCacheManager and its pool, checked with GoogleTest
// assertions (a broken one is a fatal failure of the calling test: wrap the call in
// ASSERT_NO_FATAL_FAILURE to stop there).

#include <span>

#include "kv/kv_cache_manager.h"

namespace pagoda::kv {

// `requests`: the ids of every request that may hold a table. Checks that
//  - each block is held by exactly as many tables as its reference count says (so the
//    sum of table lengths equals the sum of reference counts), at most once per table;
//  - the free queue holds every block with no reference, each exactly once, and
//    n_free() counts them;
//  - every cached block's key re-hashes to its hash and find() returns that block;
//  - usage() is the share of referenced blocks.
void check_kv_invariants(const KvCacheManager& kv, std::span<const RequestId> requests);

}  // namespace pagoda::kv
