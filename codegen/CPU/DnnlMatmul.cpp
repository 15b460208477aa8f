//===- DnnlMatmul.cpp - oneDNN matmul over a packed weight ----------------===//
//
// oneDNN (Debian's 2.6 build) threads with OpenMP, not with our pool: while
// it runs, the pool's workers sleep. libgomp's idle threads spin for a bounded
// time (GOMP_SPINCOUNT) and then block, which fits the shared-machine rule.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/DnnlMatmul.h"
#include "codegen/CPU/Convert.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace folio::cpu::detail {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// Rows a fixed-M primitive is built for: M rounded up to 16 (M <= 128) or
/// to 64, so a handful of primitives per weight cover every prefill length;
/// the padding rows are zeros in a scratch and their outputs are dropped.
int64_t bucketRows(int64_t m) {
  int64_t step = m <= 128 ? 16 : 64;
  return (m + step - 1) / step * step;
}

/// Buckets per weight beyond which run() stays on the runtime-M primitive.
constexpr size_t kMaxBuckets = 32;
/// Row count the blocked layout is chosen for at pack time (a typical
/// prefill chunk); other buckets are built over that same layout.
constexpr int64_t kLayoutRows = 512;

/// In features from which the blocked copy is skipped: measured here (1
/// thread, bf16, M = 512, interleaved best of 60), brgemm over the blocked
/// layout beats gemm:jit over `ba` by 1.4-1.6x for K = 768 (N = 256...2048)
/// but loses for K >= 2048 (N = 768: 550 vs 750 GFLOP/s; 4096 x 4096: 400
/// vs 500), where gemm:jit is the better kernel and the copy would be waste.
/// Rechecked for the down projection (N = 768, K = 2048, M = 512, runs
/// alternated in folio-linear-bench): brgemm 357 vs gemm:jit 344-361
/// GFLOP/s, a tie, so the rule stands.
constexpr int64_t kBlockedMaxK = 2048;

bool blockedDisabled() {
  const char *v = std::getenv("FOLIO_DNNL_WEIGHTS");
  return v && std::strcmp(v, "ba") == 0;
}

} // namespace

struct DnnlMatmul::State {
  /// Runtime M over the borrowed [N, K] (`ba`) weights: oneDNN 2.6 runs
  /// runtime-M matmuls with its older gemm:jit, never brgemm/AMX, so this is
  /// only the fallback.
  dnnl::matmul primitive;
  dnnl::memory weights;
  dnnl::memory bias; // empty when there is none
  bool hasBias = false;
  dt srcType = dt::f32;
  int64_t n = 0, k = 0;
  /// The weights reordered once, at pack, into the layout oneDNN's brgemm
  /// (AMX / AVX-512) picks (`format_tag::any`); empty if none was found.
  dnnl::memory blocked;
  dnnl::memory::desc blockedDesc;
  size_t blockedBytes = 0;
  /// Fixed-M primitives over `blocked`, one per bucketRows(M), made lazily.
  /// A null primitive marks a bucket oneDNN could not serve with brgemm.
  mutable std::mutex mu;
  mutable std::unordered_map<int64_t, dnnl::matmul> byRows;

  dnnl::matmul makeFixed(int64_t rows, const dnnl::memory::desc &wts,
                         dnnl::matmul::primitive_desc *pdOut = nullptr) const {
    dnnl::memory::desc src({rows, k}, srcType, tag::ab);
    dnnl::memory::desc dst({rows, n}, dt::f32, tag::ab);
    dnnl::memory::desc bia({1, n}, dt::f32, tag::ab);
    dnnl::matmul::desc desc = hasBias ? dnnl::matmul::desc(src, wts, bia, dst)
                                      : dnnl::matmul::desc(src, wts, dst);
    dnnl::matmul::primitive_desc pd(desc, cpuEngine());
    if (std::strncmp(pd.impl_info_str(), "brg", 3) != 0)
      return dnnl::matmul();
    if (pdOut)
      *pdOut = pd;
    return dnnl::matmul(pd);
  }

  /// The fixed-M primitive for `rows`, or null (use the runtime-M one).
  dnnl::matmul fixedFor(int64_t rows) const {
    std::lock_guard<std::mutex> lock(mu);
    auto it = byRows.find(rows);
    if (it != byRows.end())
      return it->second;
    if (byRows.size() >= kMaxBuckets)
      return dnnl::matmul();
    dnnl::matmul p;
    try {
      p = makeFixed(rows, blockedDesc);
    } catch (const dnnl::error &) {
      p = dnnl::matmul();
    }
    byRows.emplace(rows, p);
    return p;
  }
};

DnnlMatmul::DnnlMatmul(std::unique_ptr<State> s) : state(std::move(s)) {}
DnnlMatmul::~DnnlMatmul() = default;

size_t DnnlMatmul::extraWeightBytes() const { return state->blockedBytes; }

std::unique_ptr<DnnlMatmul> DnnlMatmul::create(const void *w, DType storage,
                                               int64_t n, int64_t k,
                                               const float *bias,
                                               std::string &why) {
  if (storage != DType::F32 && storage != DType::BF16) {
    why = std::string("oneDNN matmul: unsupported weight type ") +
          dtypeName(storage);
    return nullptr;
  }
  try {
    auto s = std::make_unique<State>();
    s->n = n;
    s->k = k;
    s->srcType = storage == DType::BF16 ? dt::bf16 : dt::f32;
    const dnnl::memory::dim rt = DNNL_RUNTIME_DIM_VAL;
    dnnl::memory::desc src({rt, k}, s->srcType, tag::ab);
    // W[N, K] row-major is the K x N weights matrix in `ba` order.
    dnnl::memory::desc wts({k, n}, s->srcType, tag::ba);
    dnnl::memory::desc dst({rt, n}, dt::f32, tag::ab);
    dnnl::memory::desc bia({1, n}, dt::f32, tag::ab);
    s->hasBias = bias != nullptr;
    dnnl::matmul::desc desc = s->hasBias
                                  ? dnnl::matmul::desc(src, wts, bia, dst)
                                  : dnnl::matmul::desc(src, wts, dst);
    dnnl::matmul::primitive_desc pd(desc, cpuEngine());
    s->primitive = dnnl::matmul(pd);
    s->weights = dnnl::memory(wts, cpuEngine(), const_cast<void *>(w));
    if (s->hasBias)
      s->bias = dnnl::memory(bia, cpuEngine(), const_cast<float *>(bias));
    // The layout brgemm wants, chosen once for a typical prefill, and one
    // reorder into it. Failing that, the runtime-M primitive does all M.
    if (k < kBlockedMaxK && !blockedDisabled()) {
      try {
        dnnl::memory::desc anyW({k, n}, s->srcType, tag::any);
        dnnl::matmul::primitive_desc fixedPd;
        dnnl::matmul fixed = s->makeFixed(kLayoutRows, anyW, &fixedPd);
        if (fixed) {
          s->blockedDesc = fixedPd.weights_desc();
          s->blocked = dnnl::memory(s->blockedDesc, cpuEngine());
          dnnl::stream stream(cpuEngine());
          dnnl::reorder(s->weights, s->blocked)
              .execute(stream, s->weights, s->blocked);
          stream.wait();
          s->blockedBytes = s->blockedDesc.get_size();
          s->byRows.emplace(kLayoutRows, fixed);
        }
      } catch (const dnnl::error &) {
        s->blocked = dnnl::memory();
        s->blockedBytes = 0;
        s->byRows.clear();
      }
    }
    return std::unique_ptr<DnnlMatmul>(new DnnlMatmul(std::move(s)));
  } catch (const dnnl::error &e) {
    why = std::string("oneDNN matmul: ") + e.what();
    return nullptr;
  }
}

Status DnnlMatmul::run(const float *x, int64_t m, float *y,
                       ThreadPool &pool) const {
  const State &s = *state;
  try {
    dnnl::engine &eng = cpuEngine();
    dnnl::stream stream(eng);
    // A per-thread scratch for x in bf16: the executor issues one layer at a
    // time, so it is reused across all layers of a step.
    // Fixed-M primitive over the blocked weights when there is one: rows
    // padded up to its bucket (zeros in; the extra outputs land in a scratch
    // and are dropped).
    int64_t rows = m;
    dnnl::matmul fixed;
    if (s.blocked) {
      fixed = s.fixedFor(bucketRows(m));
      if (fixed)
        rows = bucketRows(m);
    }
    thread_local std::vector<uint16_t> xBf16;
    thread_local std::vector<float> xPad, yPad;
    void *src = const_cast<float *>(x);
    int64_t k = s.k;
    if (s.srcType == dt::bf16) {
      xBf16.resize(size_t(rows * k));
      uint16_t *dstRows = xBf16.data();
      pool.parallelFor(m, 16, [&](int64_t b, int64_t e) {
        storeRow(x + b * k, dstRows + b * k, DType::BF16, (e - b) * k);
      });
      std::memset(dstRows + m * k, 0, size_t((rows - m) * k) * 2);
      src = dstRows;
    } else if (rows != m) {
      xPad.resize(size_t(rows * k));
      std::memcpy(xPad.data(), x, size_t(m * k) * sizeof(float));
      std::memset(xPad.data() + m * k, 0, size_t((rows - m) * k) * 4);
      src = xPad.data();
    }
    float *dst = y;
    if (rows != m) {
      yPad.resize(size_t(rows * s.n));
      dst = yPad.data();
    }
    dnnl::memory srcMem({{rows, k}, s.srcType, tag::ab}, eng, src);
    dnnl::memory dstMem({{rows, s.n}, dt::f32, tag::ab}, eng, dst);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, srcMem},
        {DNNL_ARG_WEIGHTS, fixed ? s.blocked : s.weights},
        {DNNL_ARG_DST, dstMem}};
    if (s.hasBias)
      args.insert({DNNL_ARG_BIAS, s.bias});
    (fixed ? fixed : s.primitive).execute(stream, args);
    stream.wait();
    if (dst != y)
      std::memcpy(y, dst, size_t(m * s.n) * sizeof(float));
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN matmul failed: ") + e.what());
  }
  return Status::success();
}

} // namespace folio::cpu::detail
