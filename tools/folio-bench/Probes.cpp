//===- Probes.cpp - Memory bandwidth and GEMM peak ------------------------===//

#include "tools/folio-bench/Probes.h"

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

__attribute__((target("avx2"))) float sumAvx2(const float *p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, a);
  float s = 0;
  for (float v : lanes)
    s += v;
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

std::unique_ptr<BandwidthProbe> BandwidthProbe::create(size_t bytes,
                                                       cpu::ThreadPool &pool) {
  size_t n = bytes / sizeof(float) / 64 * 64;
  if (n == 0)
    return nullptr;
  auto *buf = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  if (!buf)
    return nullptr;
  // Touch every page (and make the data non-trivial) before timing.
  pool.parallelFor(int64_t(n), 1 << 20, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      buf[i] = float(i & 7);
  });
  return std::unique_ptr<BandwidthProbe>(new BandwidthProbe(buf, n, pool));
}

BandwidthProbe::~BandwidthProbe() { std::free(buf); }

double BandwidthProbe::sample() {
  const cpu::Isa isa = cpu::activeIsa();
  // One contiguous chunk per thread: each streams its part once.
  int64_t chunks = pool.numThreads();
  int64_t per = int64_t(n) / chunks / 64 * 64;
  std::vector<float> partial(size_t(chunks), 0.f);
  auto t0 = Clock::now();
  pool.parallelFor(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const float *p = buf + c * per;
      size_t len = c == chunks - 1 ? n - size_t(c * per) : size_t(per);
      partial[size_t(c)] = isa == cpu::Isa::Avx512 ? sumAvx512(p, len)
                           : isa == cpu::Isa::Avx2 ? sumAvx2(p, len)
                                                   : sumScalar(p, len);
    }
  });
  auto t1 = Clock::now();
  volatile float sink = 0;
  for (float v : partial)
    sink = sink + v;
  (void)sink;
  return double(n * sizeof(float)) / seconds(t0, t1);
}

#ifdef FOLIO_ENABLE_DNNL
struct GemmProbe::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::memory a, b, c;
  dnnl::matmul mm;
  int64_t n = 0;
  int threads = 1;
};
#else
struct GemmProbe::State {};
#endif

GemmProbe::GemmProbe(std::unique_ptr<State> s) : state(std::move(s)) {}
GemmProbe::~GemmProbe() = default;

std::unique_ptr<GemmProbe> GemmProbe::create(int64_t n, bool bf16,
                                             int threads) {
#ifdef FOLIO_ENABLE_DNNL
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  try {
    auto s = std::make_unique<State>();
    s->n = n;
    s->threads = threads;
    cpu::setLibraryThreads(threads);
    dt in = bf16 ? dt::bf16 : dt::f32;
    memory::desc a({n, n}, in, tag::ab), bAny({n, n}, in, tag::any),
        c({n, n}, dt::f32, tag::ab);
    matmul::primitive_desc pd(matmul::desc(a, bAny, c), s->eng);
    s->a = memory(a, s->eng);
    s->b = memory(pd.weights_desc(), s->eng);
    s->c = memory(c, s->eng);
    // Values do not matter for speed; zeros are fine but touch the pages.
    std::memset(s->a.get_data_handle(), 0, a.get_size());
    std::memset(s->b.get_data_handle(), 0, pd.weights_desc().get_size());
    s->mm = matmul(pd);
    auto probe = std::unique_ptr<GemmProbe>(new GemmProbe(std::move(s)));
    probe->sample(); // JIT and first touch of the output
    return probe;
  } catch (const dnnl::error &) {
    return nullptr;
  }
#else
  (void)n, (void)bf16, (void)threads;
  return nullptr;
#endif
}

double GemmProbe::sample() {
#ifdef FOLIO_ENABLE_DNNL
  State &s = *state;
  // OpenMP's team size is per calling thread and the model run in between
  // may have changed it.
  cpu::setLibraryThreads(s.threads);
  auto t0 = Clock::now();
  s.mm.execute(
      s.strm,
      {{DNNL_ARG_SRC, s.a}, {DNNL_ARG_WEIGHTS, s.b}, {DNNL_ARG_DST, s.c}});
  s.strm.wait();
  double n = double(s.n);
  return 2.0 * n * n * n / seconds(t0, Clock::now());
#else
  return 0;
#endif
}

} // namespace folio::bench
