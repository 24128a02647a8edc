#include "cli/bench_profile.h"

#include <cstdio>

namespace pagoda::cli {

std::string format_op_profile(const std::vector<backend::OpTime>& ops, double n_tokens,
                              double wall_seconds) {
  if (n_tokens <= 0.0 || wall_seconds <= 0.0) return {};
  const double us_per_token = 1e6 / n_tokens;
  std::string text =
      "op                                             calls/token   us/token   share     GB/s\n";
  char line[256];
  double op_seconds = 0.0;
  for (const backend::OpTime& op : ops) {
    op_seconds += op.seconds;
    char gbs[32] = "";
    if (op.weight_bytes > 0 && op.seconds > 0.0) {
      std::snprintf(gbs, sizeof gbs, "%8.1f", static_cast<double>(op.weight_bytes) / op.seconds / 1e9);
    }
    std::snprintf(line, sizeof line, "%-46s %11.2f %10.1f %6.1f%% %s\n", op.name.c_str(),
                  static_cast<double>(op.calls) / n_tokens, op.seconds * us_per_token,
                  100.0 * op.seconds / wall_seconds, gbs);
    text += line;
  }
  const double outside = wall_seconds - op_seconds;
  std::snprintf(line, sizeof line, "%-46s %11s %10.1f %6.1f%%\n", "all ops", "",
                op_seconds * us_per_token, 100.0 * op_seconds / wall_seconds);
  text += line;
  std::snprintf(line, sizeof line, "%-46s %11s %10.1f %6.1f%%\n",
                "outside the ops (engine step, sampling)", "", outside * us_per_token,
                100.0 * outside / wall_seconds);
  text += line;
  return text;
}

}  // namespace pagoda::cli
