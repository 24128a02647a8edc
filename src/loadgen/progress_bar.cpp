#include "loadgen/progress_bar.h"

#include <string>

namespace pagoda::loadgen {

std::string progress_line(const RunProgress& p, int width) {
  const size_t cells = static_cast<size_t>(width > 0 ? width : 1);
  const size_t filled = p.total > 0 ? cells * p.finished / p.total : cells;
  std::string line;
  line.reserve(cells + 64);
  line.push_back('[');
  line.append(filled, '#');
  line.append(cells - filled, '.');
  line.append("] ");
  char numbers[128];
  std::snprintf(numbers, sizeof numbers, "%zu/%zu requests", p.finished, p.total);
  line += numbers;
  if (p.failed > 0) {
    std::snprintf(numbers, sizeof numbers, "  %zu failed", p.failed);
    line += numbers;
  }
  std::snprintf(numbers, sizeof numbers, "  %.1f s", p.elapsed_s);
  line.append(numbers);
  return line;
}

void ProgressBar::update(const RunProgress& progress) {
  const auto now = std::chrono::steady_clock::now();
  const bool last = progress.finished == progress.total;
  if (drawn_ && !last && now - last_draw_ < min_interval_) return;
  last_draw_ = now;
  drawn_ = true;
  // Clear to the end of the line: the previous text may have been longer.
  std::fprintf(out_, "\r%s\033[K", progress_line(progress).c_str());
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (!drawn_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace pagoda::loadgen
