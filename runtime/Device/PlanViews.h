//===- PlanViews.h - Where a read of a plan value lands ---------*- C++ -*-===//
//
// The walk PlanLaunches.h makes over a plan's kernels keeps, for every
// value, whether it holds data yet (an input, a constant, what an earlier
// launch wrote); a read of any other value is resolved through the reshape
// and slice steps that define it to the value holding its elements, as an
// element offset and a row stride.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_PLANVIEWS_H
#define FOLIO_RUNTIME_DEVICE_PLANVIEWS_H

#include "runtime/Device/PlanLaunches.h"

#include <string>
#include <vector>

namespace folio::device {

/// Elements of static dims, -1 dims skipped.
int64_t staticElements(const std::vector<int64_t> &dims);
/// Elements of `dims`, or -1 when one is dynamic.
int64_t elementsOf(const std::vector<int64_t> &dims);

/// Which values hold data, and where a read of any value lands.
class PlanViews {
public:
  explicit PlanViews(const plan::Plan &plan);

  /// `value` as data: itself when it holds data, else what the reshape and
  /// slice steps defining it view; false with `why` set for anything else
  /// (another step's result no launch wrote, a slice across a strided
  /// view's rows, a slice of a dynamic axis).
  bool resolve(int32_t value, LaunchOperand &out, std::string &why) const;

  /// A contiguous read of `value` (no row stride).
  bool contiguous(int32_t value, LaunchOperand &out, std::string &why) const;

  /// `value` holds data from here on (a launch writes it).
  void markWritten(int32_t value) {
    if (value >= 0)
      written[size_t(value)] = true;
  }

  const plan::Plan &plan;

private:
  bool resolveView(int32_t value, LaunchOperand &out, std::string &why) const;

  std::vector<int32_t> producer;
  std::vector<bool> written;
};

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_PLANVIEWS_H
