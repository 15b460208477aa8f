//===- Probes.h - Machine ceilings measured in the benchmark's run -*- C++ -*-//
//
// The two denominators of the roofline: how fast this process can stream
// memory, and how fast oneDNN multiplies large bf16 (or f32) matrices, both
// on the thread count being benchmarked and measured in the same run, so
// that a shared, noisy machine moves numerator and denominator together.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_PROBES_H
#define FOLIO_TOOLS_FOLIO_BENCH_PROBES_H

#include "codegen/CPU/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace folio::bench {

/// Read bandwidth in bytes/s: one pass per sample over `bytes` (far larger
/// than the last-level cache), split over `pool`, AVX-512 loads where the
/// CPU has them. The buffer is touched before timing.
std::vector<double> measureReadBandwidth(size_t bytes, int samples,
                                         cpu::ThreadPool &pool);

/// FLOP/s of oneDNN's matmul on an n x n x n problem (bf16 inputs and f32
/// output, or f32 throughout), weights in oneDNN's preferred layout, on
/// `threads` OpenMP threads. Empty when oneDNN is not built in.
std::vector<double> measureGemmPeak(int64_t n, bool bf16, int samples,
                                    int threads);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_PROBES_H
