#pragma once
// `pagoda bench --profile`: where a test's time went, per token, from the backend's op
// times (backend/op_times.h): one line per op (calls and microseconds per token, share
// of the wall time, and for matmuls the GB/s of weights they read), then the time outside
// the ops (the engine's step around the forward pass: scheduling, sampling, waiting).

#include <string>
#include <vector>

#include "backend/op_times.h"

namespace pagoda::cli {

// `ops`: the totals of `n_tokens` tokens that took `wall_seconds` in all.
std::string format_op_profile(const std::vector<backend::OpTime>& ops, double n_tokens,
                              double wall_seconds);

}  // namespace pagoda::cli
