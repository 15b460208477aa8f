//===- Probes.cpp - Memory bandwidth and GEMM peak ------------------------===//

#include "Probes.h"

#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/Linear.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>

#ifdef FOLIO_ENABLE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace folio::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Four independent accumulators so the adds never limit the loads.
__attribute__((target("avx512f"))) float sumAvx512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  float s = _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; i < n; ++i)
    s += p[i];
  return s;
}

float sumScalar(const float *p, size_t n) {
  float a[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      a[j] += p[i + size_t(j)];
  float s = 0;
  for (float v : a)
    s += v;
  for (; i < n; ++i)
    s += p[i];
  return s;
}

} // namespace

std::vector<double> measureReadBandwidth(size_t bytes, int samples,
                                         cpu::ThreadPool &pool) {
  size_t n = bytes / sizeof(float) / 64 * 64;
  auto *buf = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  if (!buf)
    return {};
  // Touch every page (and make the data non-trivial) before timing.
  pool.parallelFor(int64_t(n), 1 << 20, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      buf[i] = float(i & 7);
  });
  bool avx512 = cpu::activeIsa() == cpu::Isa::Avx512;
  // One contiguous chunk per thread: each streams its part once.
  int64_t chunks = pool.numThreads();
  int64_t per = int64_t(n) / chunks / 64 * 64;
  std::vector<double> out;
  volatile float sink = 0;
  for (int s = 0; s < samples; ++s) {
    std::vector<float> partial(size_t(chunks), 0.f);
    auto t0 = Clock::now();
    pool.parallelFor(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const float *p = buf + c * per;
        size_t len = c == chunks - 1 ? n - size_t(c * per) : size_t(per);
        partial[size_t(c)] = avx512 ? sumAvx512(p, len) : sumScalar(p, len);
      }
    });
    auto t1 = Clock::now();
    for (float v : partial)
      sink = sink + v;
    out.push_back(double(n * sizeof(float)) / seconds(t0, t1));
  }
  (void)sink;
  std::free(buf);
  return out;
}

std::vector<double> measureGemmPeak(int64_t n, bool bf16, int samples,
                                    int threads) {
#ifdef FOLIO_ENABLE_DNNL
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  cpu::setLibraryThreads(threads);
  try {
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    dt in = bf16 ? dt::bf16 : dt::f32;
    memory::desc a({n, n}, in, tag::ab), bAny({n, n}, in, tag::any),
        c({n, n}, dt::f32, tag::ab);
    matmul::primitive_desc pd(matmul::desc(a, bAny, c), eng);
    memory am(a, eng), cm(c, eng), bm(pd.weights_desc(), eng);
    // Values do not matter for speed; zeros are fine but touch the pages.
    std::memset(am.get_data_handle(), 0, a.get_size());
    std::memset(bm.get_data_handle(), 0, pd.weights_desc().get_size());
    matmul mm(pd);
    auto run = [&] {
      mm.execute(
          strm,
          {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
      strm.wait();
    };
    run(); // JIT and first touch of the output
    std::vector<double> out;
    for (int s = 0; s < samples; ++s) {
      auto t0 = Clock::now();
      run();
      out.push_back(2.0 * double(n) * double(n) * double(n) /
                    seconds(t0, Clock::now()));
    }
    return out;
  } catch (const dnnl::error &) {
    return {};
  }
#else
  (void)n, (void)bf16, (void)samples, (void)threads;
  return {};
#endif
}

} // namespace folio::bench
