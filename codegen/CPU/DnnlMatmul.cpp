//===- DnnlMatmul.cpp - oneDNN matmul over a packed weight ----------------===//
//
// oneDNN (Debian's 2.6 build) threads with OpenMP. Folio does not let it:
// the matmul is cut into column slices whose boundaries depend only on the
// weight's shape, and each slice runs as a single-threaded oneDNN primitive
// on a ThreadPool thread. So all of a step's kernels share one pool that
// never waits for a thread without a core (ThreadPool.h), and libgomp never
// starts a team whose workers would spin for milliseconds after each matmul
// on the cores the pool wants. The slices also make results independent of
// the thread count: each output column is computed by the same primitive
// whatever the pool size.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/DnnlMatmul.h"
#include "codegen/CPU/Convert.h"
#include "codegen/CPU/Linear.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
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

/// Buckets per slice width beyond which run() stays on the runtime-M
/// primitive.
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

/// Columns per slice: about eight slices, so two to four threads get even
/// shares, in multiples of 64 (whole AMX / AVX-512 column blocks), at
/// least 64. A function of N only (see the file comment).
int64_t sliceWidth(int64_t n) {
  int64_t w = (n / 8 + 63) / 64 * 64;
  return std::min(n, std::max<int64_t>(64, w));
}

bool blockedDisabled() {
  const char *v = std::getenv("FOLIO_DNNL_WEIGHTS");
  return v && std::strcmp(v, "ba") == 0;
}

/// oneDNN plans its parallel loops for omp_get_max_threads() at primitive
/// creation and opens a team of that size at execution, so every thread
/// that creates or runs one of our primitives asks for one thread first
/// (an OpenMP setting is per thread).
void oneLibraryThread() { setLibraryThreads(1); }

struct Prim {
  dnnl::matmul p;
  size_t scratch = 0; // user scratchpad bytes
  explicit operator bool() const { return bool(p); }
};

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// A 64-byte aligned scratch per thread for oneDNN's user scratchpad: with
/// the library's own scratchpad, primitives run concurrently from several
/// threads could share one buffer.
void *threadScratch(size_t bytes) {
  struct Buf {
    void *p = nullptr;
    size_t size = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf buf;
  if (bytes > buf.size) {
    std::free(buf.p);
    size_t rounded = (bytes + 63) / 64 * 64;
    buf.p = std::aligned_alloc(64, rounded);
    buf.size = buf.p ? rounded : 0;
  }
  return buf.p;
}

} // namespace

struct DnnlMatmul::State {
  /// Everything that depends only on a slice's width (there are at most two
  /// widths: the common one and the last slice's).
  struct Width {
    int64_t width = 0;
    /// Runtime M over the borrowed `ba` view: oneDNN 2.6 runs runtime-M
    /// matmuls with its older gemm:jit, never brgemm/AMX, so this is only
    /// the fallback.
    Prim runtimeM;
    /// The layout oneDNN's brgemm (AMX / AVX-512) picks for this width
    /// (`format_tag::any`), or none.
    dnnl::memory::desc blockedDesc;
    bool blocked = false;
    /// Fixed-M primitives over the blocked layout, one per bucketRows(M),
    /// made lazily; a null one marks a bucket brgemm could not serve.
    std::unordered_map<int64_t, Prim> byRows;
  };
  struct Slice {
    int64_t n0 = 0;
    size_t width = 0;     // index into widths
    dnnl::memory raw;     // `ba` view of rows [n0, n0 + width) of W[N, K]
    dnnl::memory blocked; // the reordered copy, when widths[width].blocked
    dnnl::memory bias;    // empty when there is none
  };

  std::vector<Width> widths;
  std::vector<Slice> slices;
  bool hasBias = false;
  dt srcType = dt::f32;
  int64_t n = 0, k = 0;
  size_t blockedBytes = 0;
  mutable std::mutex mu;

  dnnl::memory::desc dstDesc(int64_t rows, int64_t width) const {
    return dnnl::memory::desc({rows, width}, dt::f32, dnnl::memory::dims{n, 1});
  }

  Prim makeFixed(int64_t rows, int64_t width, const dnnl::memory::desc &wts,
                 dnnl::memory::desc *chosen = nullptr) const {
    dnnl::memory::desc src({rows, k}, srcType, tag::ab);
    dnnl::memory::desc bia({1, width}, dt::f32, tag::ab);
    dnnl::matmul::desc desc =
        hasBias ? dnnl::matmul::desc(src, wts, bia, dstDesc(rows, width))
                : dnnl::matmul::desc(src, wts, dstDesc(rows, width));
    dnnl::matmul::primitive_desc pd(desc, userScratchpad(), cpuEngine());
    if (std::strncmp(pd.impl_info_str(), "brg", 3) != 0)
      return Prim();
    if (chosen)
      *chosen = pd.weights_desc();
    return Prim{dnnl::matmul(pd), pd.scratchpad_desc().get_size()};
  }

  /// The fixed-M primitive of width `w` for `rows`, or null (use the
  /// runtime-M one). Called on run()'s thread only, before the slices fan
  /// out, so the pool's threads only read primitives.
  Prim fixedFor(Width &w, int64_t rows) const {
    std::lock_guard<std::mutex> lock(mu);
    auto it = w.byRows.find(rows);
    if (it != w.byRows.end())
      return it->second;
    if (w.byRows.size() >= kMaxBuckets)
      return Prim();
    Prim p;
    try {
      p = makeFixed(rows, w.width, w.blockedDesc);
    } catch (const dnnl::error &) {
      p = Prim();
    }
    w.byRows.emplace(rows, p);
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
  oneLibraryThread();
  try {
    auto s = std::make_unique<State>();
    s->n = n;
    s->k = k;
    s->srcType = storage == DType::BF16 ? dt::bf16 : dt::f32;
    s->hasBias = bias != nullptr;
    size_t elem = dtypeSize(storage);
    dnnl::engine &eng = cpuEngine();
    bool tryBlocked = k < kBlockedMaxK && !blockedDisabled();
    int64_t common = sliceWidth(n);
    for (int64_t n0 = 0; n0 < n; n0 += common) {
      int64_t width = std::min(common, n - n0);
      size_t wi = 0;
      while (wi < s->widths.size() && s->widths[wi].width != width)
        ++wi;
      // W[N, K] row-major is the K x N weights matrix in `ba` order; a
      // slice of columns is a contiguous run of W's rows.
      dnnl::memory::desc raw({k, width}, s->srcType, dnnl::memory::dims{1, k});
      if (wi == s->widths.size()) {
        State::Width nw;
        nw.width = width;
        const dnnl::memory::dim rt = DNNL_RUNTIME_DIM_VAL;
        dnnl::memory::desc src({rt, k}, s->srcType, tag::ab);
        dnnl::memory::desc dst({rt, width}, dt::f32, dnnl::memory::dims{n, 1});
        dnnl::memory::desc bia({1, width}, dt::f32, tag::ab);
        dnnl::matmul::desc desc = s->hasBias
                                      ? dnnl::matmul::desc(src, raw, bia, dst)
                                      : dnnl::matmul::desc(src, raw, dst);
        dnnl::matmul::primitive_desc pd(desc, userScratchpad(), eng);
        nw.runtimeM = Prim{dnnl::matmul(pd), pd.scratchpad_desc().get_size()};
        // The layout brgemm wants, chosen once for a typical prefill.
        // Failing that, the runtime-M primitive does all M.
        if (tryBlocked) {
          try {
            dnnl::memory::desc anyW({k, width}, s->srcType, tag::any);
            Prim fixed =
                s->makeFixed(kLayoutRows, width, anyW, &nw.blockedDesc);
            if (fixed) {
              nw.blocked = true;
              nw.byRows.emplace(kLayoutRows, fixed);
            }
          } catch (const dnnl::error &) {
            nw.blocked = false;
          }
        }
        s->widths.push_back(std::move(nw));
      }
      State::Slice sl;
      sl.n0 = n0;
      sl.width = wi;
      sl.raw = dnnl::memory(raw, eng,
                            const_cast<char *>(static_cast<const char *>(w)) +
                                n0 * k * elem);
      if (s->hasBias)
        sl.bias = dnnl::memory({{1, width}, dt::f32, tag::ab}, eng,
                               const_cast<float *>(bias) + n0);
      s->slices.push_back(std::move(sl));
    }
    // One reorder per slice into its width's blocked layout.
    dnnl::stream stream(eng);
    for (State::Slice &sl : s->slices) {
      State::Width &wd = s->widths[sl.width];
      if (!wd.blocked)
        continue;
      sl.blocked = dnnl::memory(wd.blockedDesc, eng);
      dnnl::reorder(sl.raw, sl.blocked).execute(stream, sl.raw, sl.blocked);
      s->blockedBytes += wd.blockedDesc.get_size();
    }
    stream.wait();
    return std::unique_ptr<DnnlMatmul>(new DnnlMatmul(std::move(s)));
  } catch (const dnnl::error &e) {
    why = std::string("oneDNN matmul: ") + e.what();
    return nullptr;
  }
}

Status DnnlMatmul::run(const float *x, int64_t m, float *y,
                       ThreadPool &pool) const {
  State &s = *state;
  oneLibraryThread();
  // Fixed-M primitives over the blocked weights where there are: rows
  // padded up to the bucket (zeros in; the extra outputs land in a scratch
  // and are dropped). Chosen here, on one thread, per width.
  int64_t rows = bucketRows(m);
  std::vector<Prim> fixed(s.widths.size());
  bool padded = false;
  for (size_t i = 0; i < s.widths.size(); ++i)
    if (s.widths[i].blocked) {
      fixed[i] = s.fixedFor(s.widths[i], rows);
      padded |= bool(fixed[i]);
    }
  if (!padded)
    rows = m;
  // Per calling thread: the executor issues one layer at a time, and the
  // pool's threads only read these.
  thread_local std::vector<uint16_t> xBf16;
  thread_local std::vector<float> xPad, yPad;
  const void *src = x;
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

  std::atomic<bool> failed{false};
  std::mutex errMu;
  std::string err;
  dnnl::engine &eng = cpuEngine();
  pool.parallelFor(int64_t(s.slices.size()), 1, [&](int64_t b, int64_t e) {
    try {
      oneLibraryThread();
      thread_local dnnl::stream stream(cpuEngine());
      for (int64_t i = b; i < e; ++i) {
        const State::Slice &sl = s.slices[size_t(i)];
        const State::Width &wd = s.widths[sl.width];
        const Prim &f = fixed[sl.width];
        const Prim &p = f ? f : wd.runtimeM;
        // A padded bucket for the fixed primitive; the runtime-M one
        // reads only the m real rows (padded or not, they come first).
        int64_t r = f ? rows : m;
        dnnl::memory srcMem({{r, k}, s.srcType, tag::ab}, eng,
                            const_cast<void *>(src));
        dnnl::memory dstMem(s.dstDesc(r, wd.width), eng, dst + sl.n0);
        std::unordered_map<int, dnnl::memory> args = {
            {DNNL_ARG_SRC, srcMem},
            {DNNL_ARG_WEIGHTS, f ? sl.blocked : sl.raw},
            {DNNL_ARG_DST, dstMem}};
        if (s.hasBias)
          args.insert({DNNL_ARG_BIAS, sl.bias});
        if (p.scratch)
          args.insert({DNNL_ARG_SCRATCHPAD,
                       dnnl::memory({{int64_t(p.scratch)}, dt::u8, tag::a}, eng,
                                    threadScratch(p.scratch))});
        p.p.execute(stream, args);
      }
      stream.wait();
    } catch (const dnnl::error &ex) {
      std::lock_guard<std::mutex> lock(errMu);
      if (!failed.exchange(true))
        err = ex.what();
    }
  });
  if (failed)
    return Status::error(std::string("oneDNN matmul failed: ") + err);
  if (dst != y)
    std::memcpy(y, dst, size_t(m * s.n) * sizeof(float));
  return Status::success();
}

} // namespace folio::cpu::detail
