#include "engine/kv_budget.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace pagoda::engine {
namespace {

std::string mebibytes(uint64_t bytes) {
  if (bytes < 1024 * 1024) return std::to_string(bytes) + " bytes";
  std::ostringstream text;
  text.precision(1);
  text << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return text.str();
}

Status check_limits(const KvBlockLimits& limits) {
  if (limits.block_bytes == 0 || limits.min_blocks <= 0 || limits.max_blocks <= 0 ||
      limits.useful_blocks < limits.min_blocks) {
    return invalid_argument("kv budget: inconsistent block limits");
  }
  return Status::ok_status();
}

// The budget in bytes and the words saying where it came from.
Expected<std::pair<uint64_t, std::string>> budget_bytes(const KvMemoryBudget& budget,
                                                        const KvBlockLimits& limits,
                                                        std::optional<uint64_t> available) {
  if (budget.bytes) return std::pair{*budget.bytes, mebibytes(*budget.bytes) + " as configured"};
  const double share = budget.free_memory_share;
  if (!(share > 0.0 && share <= 1.0)) {
    return invalid_argument("kv budget: the share of free memory must be in (0, 1]");
  }
  if (!available) return invalid_argument("kv budget: the available memory is unknown");
  const auto shared = static_cast<uint64_t>(std::floor(static_cast<double>(*available) * share));
  const uint64_t useful = static_cast<uint64_t>(limits.useful_blocks) * limits.block_bytes;
  std::ostringstream words;
  words << static_cast<int>(std::lround(share * 100)) << "% of " << mebibytes(*available)
        << " available";
  if (shared > useful) words << ", capped at what max_running full-length requests use";
  return std::pair{std::min(shared, useful), words.str()};
}

}  // namespace

Expected<KvBlockPlan> plan_kv_blocks(const KvMemoryBudget& budget, const KvBlockLimits& limits,
                                     std::optional<uint64_t> available_bytes) {
  PAGODA_TRY(check_limits(limits));
  PAGODA_ASSIGN_OR_RETURN(auto bytes_and_source, budget_bytes(budget, limits, available_bytes));
  const auto& [bytes, source] = bytes_and_source;
  const uint64_t blocks =
      std::min<uint64_t>(bytes / limits.block_bytes, static_cast<uint64_t>(limits.max_blocks));
  if (blocks < static_cast<uint64_t>(limits.min_blocks)) {
    return resource_exhausted(
        "kv cache: a budget of " + source + " buys " + std::to_string(blocks) +
        " blocks; one request of max_model_len tokens needs " + std::to_string(limits.min_blocks) +
        " (" + mebibytes(static_cast<uint64_t>(limits.min_blocks) * limits.block_bytes) +
        "): give more memory or a smaller max_model_len");
  }
  KvBlockPlan plan;
  plan.n_blocks = static_cast<int32_t>(blocks);
  plan.bytes = blocks * limits.block_bytes;
  plan.description = source;
  return plan;
}

}  // namespace pagoda::engine
