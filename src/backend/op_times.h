#pragma once
// Time per op, summed by name, for finding where a step's time goes (`pagoda bench
// --profile`): a backend made to profile its ops (BackendOptions' profile_ops) adds each
// op's time here; the bench reads the totals of a test and prints them per token.
// Names say what ran: "rms_norm", "attention", and for a matmul its weight type and
// shape ("matmul q4_K 2048x8192"), so that one weight's share and speed stand out.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::backend {

struct OpTime {
  std::string name;
  int64_t calls = 0;
  double seconds = 0.0;     // all calls
  uint64_t weight_bytes = 0;  // weight bytes the calls read (matmuls; 0 for other ops)
};

class OpTimes {
 public:
  void add(std::string_view name, double seconds, uint64_t weight_bytes = 0);
  // Most time first.
  std::vector<OpTime> sorted() const;
  void clear() { totals_.clear(); }

 private:
  std::map<std::string, OpTime, std::less<>> totals_;
};

}  // namespace pagoda::backend
