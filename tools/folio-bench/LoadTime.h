//===- LoadTime.h - How long starting on a compiled plan takes --*- C++ -*-===//
//
// `folio-bench --mode=load`: the whole `folio-run` process on a `.folio`
// plan, one new token, against mapping the same file and touching every
// page of it, interleaved in one run. The ratio is what a plan's load costs
// beyond its page-in (docs/plan-and-executor.md).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_LOADTIME_H
#define FOLIO_TOOLS_FOLIO_BENCH_LOADTIME_H

#include "runtime/Support/Status.h"

#include <string>

namespace folio::bench {

struct LoadTimeOptions {
  /// The folio-run that is timed; empty: the one next to folio-bench.
  std::string runner;
  int repeats = 7;
  /// Drop the page cache before each timed run (`sync`, then
  /// /proc/sys/vm/drop_caches; needs root): a cold start from disk.
  bool dropCaches = false;
  /// folio-run --threads.
  int threads = 1;
};

/// One JSON object: the medians and samples of the touch probe, of
/// folio-run, and of folio-run --no-verify-weights, and their ratios.
Expected<std::string> runLoadTime(const std::string &planPath,
                                  const LoadTimeOptions &options);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_LOADTIME_H
