#pragma once
// A tensor's bytes in a block format, made row by row in parallel: what `pagoda mkmodel`
// (random rows) and `pagoda quantize` (dequantized rows of another file) share.

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace pagoda::tools {

// Writes row r's f32 values into `values` ([row] floats).
using RowSource = std::function<Status(int64_t r, std::span<float> values)>;

// n_rows rows of `row` values each, from `source`, quantized to `type` and laid out
// one after the other. Rows are handed out in tasks of about 2^18 values; each row's
// bytes depend on its values only, so the result is the same for any number of threads.
// A failure of the source or the quantizer is returned with `name` in front.
Expected<std::vector<uint8_t>> quantize_rows(DType type, int64_t row, int64_t n_rows,
                                             ThreadPool& pool, const RowSource& source,
                                             std::string_view name);

}  // namespace pagoda::tools
