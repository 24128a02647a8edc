#pragma once
// What a forward pass costs by the number of rows (tokens) it runs, as measured: a
// running average per row count, kept by the engine from its own steps. Speculative
// decoding asks it whether verifying one more proposal is worth a row, which depends on
// the backend and the batch: nearly free while a pass is bound by reading the weights,
// not once it is bound by arithmetic.
//
// Timings on a shared machine are noisy upwards (a pass that was interrupted), so an
// average follows a faster pass at once and a slower one gently. A row count not
// measured for a while is forgotten: a size that once looked dear (a busy moment) gets
// tried again now and then instead of never; one measured only once (whose single pass
// may have paid for something once, such as laying weights out) is forgotten sooner.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/scheduler_output.h"

namespace pagoda::engine {

class StepCostModel {
 public:
  // Row counts measured more than `memory_steps` passes ago are forgotten (measured
  // once: an eighth of that, at least 4).
  explicit StepCostModel(int32_t max_rows, int64_t memory_steps = 64);

  // A pass of n_rows rows took `seconds`.
  void record(int32_t n_rows, double seconds);
  // The expected seconds of a pass of n_rows rows: the average measured for it, else a
  // straight line between the nearest measured row counts below and above, else the
  // nearest one measured (flat: an unmeasured size is assumed no dearer, so that it
  // gets tried and measured). 0 when nothing is measured.
  double predict(int32_t n_rows) const;
  // Whether passes of n_rows rows have a measure (not forgotten).
  bool measured(int32_t n_rows) const;
  // Whether passes of any size have one.
  bool any_measured() const;

 private:
  struct Measure {
    double seconds = -1.0;  // running average; < 0 where unmeasured
    int64_t pass = 0;       // the pass that last measured it
    int32_t count = 0;      // measurements since it was last forgotten
  };
  bool known(std::size_t n_rows) const;

  std::vector<Measure> measures_;  // [max_rows + 1]
  int64_t memory_steps_;
  int64_t passes_ = 0;
};

// The engine's measured step costs, as speculation prices a proposal's row: from the
// decoding steps, whose rows all have logits as a proposal's does (prompt rows, without,
// cost less, and steps with them would price proposals low); until a decoding step is
// measured, from every step.
class StepCosts {
 public:
  explicit StepCosts(int32_t max_rows) : decoding_(max_rows), every_(max_rows) {}
  // A step's forward pass took `seconds`.
  void record(const SchedulerOutput& plan, double seconds);
  const StepCostModel& pricing() const { return decoding_.any_measured() ? decoding_ : every_; }

 private:
  StepCostModel decoding_;  // steps whose rows all have logits
  StepCostModel every_;     // all steps, by their rows
};

}  // namespace pagoda::engine
