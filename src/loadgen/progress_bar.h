#pragma once
// A one-line progress bar for a terminal, redrawn in place with '\r':
//   [#################.............]  57/100 requests  3 failed  12.4 s

#include <chrono>
#include <cstdio>

#include "loadgen/load_runner.h"

namespace pagoda::loadgen {

class ProgressBar {
 public:
  // `min_interval`: redraws closer together than this are skipped, except the last.
  explicit ProgressBar(std::FILE* out,
                       std::chrono::milliseconds min_interval = std::chrono::milliseconds(100))
      : out_(out), min_interval_(min_interval) {}

  void update(const RunProgress& progress);
  // Ends the line, once something was drawn.
  void finish();

 private:
  std::FILE* out_;
  std::chrono::milliseconds min_interval_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

// The bar's text for `progress`, `width` cells wide (no '\r', no newline).
std::string progress_line(const RunProgress& progress, int width = 30);

}  // namespace pagoda::loadgen
