#pragma once
// What a forward pass costs by the number of rows (tokens) it runs, as measured: a
// running average per row count, kept by the engine from its own steps. Speculative
// decoding asks it whether verifying one more proposal is worth a row, which depends on
// the backend and the batch: nearly free while a pass is bound by reading the weights,
// not once it is bound by arithmetic.

#include <cstdint>
#include <vector>

namespace pagoda::engine {

class StepCostModel {
 public:
  explicit StepCostModel(int32_t max_rows);

  // A pass of n_rows rows took `seconds`.
  void record(int32_t n_rows, double seconds);
  // The expected seconds of a pass of n_rows rows: the average measured for it, else a
  // straight line between the nearest measured row counts below and above, else the
  // nearest one measured (flat: an unmeasured size is assumed no dearer, so that it
  // gets tried and measured). 0 when nothing is measured yet.
  double predict(int32_t n_rows) const;

 private:
  std::vector<double> seconds_;  // [max_rows + 1]: running average; < 0 where unmeasured
};

}  // namespace pagoda::engine
