//===- Probes.h - Machine ceilings measured in the benchmark's run -*- C++ -*-//
//
// The two denominators of the roofline: how fast this process can stream
// memory, and how fast oneDNN multiplies large bf16 (or f32) matrices, both
// on the thread count being benchmarked and measured in the same run. Each
// probe is set up once and then sampled many times, so the roofline can
// take a sample right before and right after every model run: on a shared
// machine the ceiling drifts with other tenants' load, and a ceiling taken
// minutes earlier says little about the run it divides.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_PROBES_H
#define FOLIO_TOOLS_FOLIO_BENCH_PROBES_H

#include "codegen/CPU/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace folio::bench {

/// Read bandwidth: one pass per sample over a buffer far larger than the
/// last-level cache, split into one contiguous chunk per thread of `pool`,
/// AVX-512 loads where the CPU has them. The buffer is touched at creation.
class BandwidthProbe {
public:
  /// Null if the buffer cannot be allocated.
  static std::unique_ptr<BandwidthProbe> create(size_t bytes,
                                                cpu::ThreadPool &pool);
  ~BandwidthProbe();
  /// Bytes/s of one pass.
  double sample();

private:
  BandwidthProbe(float *buf, size_t n, cpu::ThreadPool &pool)
      : buf(buf), n(n), pool(pool) {}
  float *buf;
  size_t n;
  cpu::ThreadPool &pool;
};

/// oneDNN matmul on n x n x n (bf16 inputs and f32 output, or f32
/// throughout), weights in oneDNN's preferred layout, on `threads` OpenMP
/// threads; the primitive is JIT-compiled and run once at creation.
class GemmProbe {
public:
  /// Null when oneDNN is not built in or cannot make the primitive.
  static std::unique_ptr<GemmProbe> create(int64_t n, bool bf16, int threads);
  ~GemmProbe();
  /// FLOP/s of one run.
  double sample();

  struct State;

private:
  explicit GemmProbe(std::unique_ptr<State> s);
  std::unique_ptr<State> state;
};

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_PROBES_H
