#include "backend/op_times.h"

#include <algorithm>

namespace pagoda::backend {

void OpTimes::add(std::string_view name, double seconds, uint64_t weight_bytes) {
  auto it = totals_.find(name);
  if (it == totals_.end()) it = totals_.emplace(std::string(name), OpTime{std::string(name)}).first;
  ++it->second.calls;
  it->second.seconds += seconds;
  it->second.weight_bytes += weight_bytes;
}

std::vector<OpTime> OpTimes::sorted() const {
  std::vector<OpTime> rows;
  rows.reserve(totals_.size());
  for (const auto& [name, total] : totals_) rows.push_back(total);
  std::sort(rows.begin(), rows.end(),
            [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  return rows;
}

}  // namespace pagoda::backend
