//===- DnnlMatmul.cpp - oneDNN matmul over a packed weight ----------------===//
//
// oneDNN (Debian's 2.6 build) threads with OpenMP. Folio does not let it:
// the matmul is cut into tiles, column slices of about N/8 times row blocks
// of 256, whose boundaries depend only on the shape, and each tile runs as a
// single-threaded oneDNN primitive on a ThreadPool thread. So all of a
// step's kernels share one pool that never waits for a thread without a
// core (ThreadPool.h), and libgomp never starts a team whose workers would
// spin for milliseconds after each matmul on the cores the pool wants
// (measured, whole 2-thread 512-token prefill with oneDNN threading itself
// next to the pool: 570-770 tok/s against 1800-2080 tiled, same minutes).
// The tiles also make results independent of the thread count.
//
// oneDNN 2.6 runs brgemm (AMX / AVX-512) only on dense operands, so a
// slice's tile writes a dense block into a per-thread scratch that is then
// copied into its columns of y (0.5 MB for a 256 x 512 tile of 0.2 GFLOP
// with K = 768; not measured apart). A stacked gate/up weight skips the
// copy: its tiles write the activation instead (runGated).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/DnnlMatmul.h"
#include "codegen/CPU/Convert.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/RowKernels.h"

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
  // Never destroyed: pool threads keep thread_local streams on it, and the
  // order of static and thread-local destruction at exit is not ours.
  static dnnl::engine *engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
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
/// Rows per tile: a prefill of M rows runs as ceil(M / kRowBlock) row
/// blocks in each column slice, so two threads share a long prefill's
/// slices and, in slice-major order, mostly the same slice at a time.
constexpr int64_t kRowBlock = 256;
/// Row count the blocked layout is chosen for at pack time (a row block);
/// other buckets are built over that same layout.
constexpr int64_t kLayoutRows = kRowBlock;

/// In features from which the blocked copy is skipped (the runtime-M
/// gemm:jit over `ba` then takes every M). Measured with the tiles
/// (folio-linear-bench 5 1|2 prefill, M = 512, bf16, builds alternated on
/// a quiet machine): for the down projection (N = 768, K = 2048) brgemm
/// read 0.58-0.64 of the square-GEMM probe against 0.50-0.51 for gemm:jit
/// on 1 thread and 0.63-0.85 against 0.58-0.60 on 2; for K = 768 brgemm
/// has been 1.4-1.6x ahead since the first measurements. (With oneDNN's
/// own threading, before the tiles, gemm:jit won for K >= 2048, hence the
/// old limit of 2048.) K >= 4096 has not been measured with the tiles.
constexpr int64_t kBlockedMaxK = 4096;

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

/// Thread-local buffers above this are given back after the call that
/// needed them (a long prefill must not pin its peak for the thread's life).
constexpr size_t kKeepScratchBytes = size_t(64) << 20;

template <typename T> void trimScratch(std::vector<T> &v) {
  if (v.capacity() * sizeof(T) > kKeepScratchBytes)
    std::vector<T>().swap(v);
}

/// 64-byte aligned scratch per thread and slot (0: oneDNN's scratchpad, 1
/// and 2: slices' dense outputs); throws dnnl::error when out of memory.
/// oneDNN's scratchpad is a user one: with the library's own, primitives
/// run concurrently from several threads could share one buffer.
void *threadScratch(int slot, size_t bytes) {
  struct Buf {
    void *p = nullptr;
    size_t size = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[3];
  Buf &buf = bufs[slot];
  if (bytes > buf.size) {
    std::free(buf.p);
    size_t rounded = (bytes + 63) / 64 * 64;
    buf.p = std::aligned_alloc(64, rounded);
    buf.size = buf.p ? rounded : 0;
    if (!buf.p)
      throw dnnl::error(dnnl_out_of_memory, "matmul scratch");
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
  /// Sliced as two halves of N/2 (gate and up), slice i of the first half
  /// and slice i of the second covering the same columns of each.
  bool halves = false;
  dt srcType = dt::f32;
  int64_t n = 0, k = 0;
  size_t blockedBytes = 0;
  mutable std::mutex mu;

  /// The runtime-M primitive writes its columns of y in place (row stride
  /// N); oneDNN 2.6 serves a strided destination only with gemm:jit, so
  /// the fixed (brgemm) primitives write a dense [rows, width] block into a
  /// per-thread scratch that run() copies into y.
  dnnl::memory::desc stridedDst(int64_t rows, int64_t width) const {
    return dnnl::memory::desc({rows, width}, dt::f32, dnnl::memory::dims{n, 1});
  }

  Prim makeFixed(int64_t rows, int64_t width, const dnnl::memory::desc &wts,
                 dnnl::memory::desc *chosen = nullptr) const {
    dnnl::memory::desc src({rows, k}, srcType, tag::ab);
    dnnl::memory::desc bia({1, width}, dt::f32, tag::ab);
    dnnl::memory::desc dst({rows, width}, dt::f32, tag::ab);
    dnnl::matmul::desc desc = hasBias ? dnnl::matmul::desc(src, wts, bia, dst)
                                      : dnnl::matmul::desc(src, wts, dst);
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
                                               const float *bias, bool halves,
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
    s->halves = halves && n % 2 == 0 && n > 0;
    // Column slices [begin, end): over all of N, or over each half alike.
    int64_t part = s->halves ? n / 2 : n;
    int64_t common = sliceWidth(part);
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (int64_t base = 0; base < n; base += part)
      for (int64_t c = 0; c < part; c += common)
        spans.push_back({base + c, std::min(common, part - c)});
    for (auto [n0, width] : spans) {
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
        dnnl::memory::desc dst = s->stridedDst(rt, width);
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

/// One call's tiles: row blocks of kRowBlock within each column slice, the
/// primitive each tile runs and x in the source type the primitives read.
struct DnnlMatmul::Tiles {
  /// x in bf16 or padded, per calling thread (the executor issues one
  /// layer at a time; the pool's threads only read it). Trimmed when done.
  static std::vector<uint16_t> &xBf16() {
    thread_local std::vector<uint16_t> v;
    return v;
  }
  static std::vector<float> &xPad() {
    thread_local std::vector<float> v;
    return v;
  }

  State &s;
  int64_t m = 0, blocks = 0, lastReal = 0, lastRows = 0;
  std::vector<Prim> fixedFull, fixedLast;
  std::vector<char> useFixed;
  const char *src = nullptr;
  size_t srcElem = 4;

  /// Chooses the primitives (on the calling thread) and converts or pads x.
  /// Per width, fixed-M primitives over the blocked weights when brgemm
  /// serves both the full block and the last block's bucket (its rows
  /// padded with zeros, their outputs dropped); otherwise the runtime-M
  /// primitive for every block.
  Tiles(State &state, const float *x, int64_t rowsIn, ThreadPool &pool)
      : s(state), m(rowsIn) {
    blocks = (m + kRowBlock - 1) / kRowBlock;
    lastReal = m - (blocks - 1) * kRowBlock;
    lastRows = bucketRows(lastReal);
    size_t nw = s.widths.size();
    fixedFull.resize(nw);
    fixedLast.resize(nw);
    useFixed.assign(nw, 0);
    bool anyFixed = false;
    for (size_t i = 0; i < nw; ++i) {
      if (!s.widths[i].blocked)
        continue;
      State::Width &w = s.widths[i];
      fixedLast[i] = s.fixedFor(w, lastRows);
      if (blocks > 1)
        fixedFull[i] = s.fixedFor(w, kRowBlock);
      useFixed[i] = fixedLast[i] && (blocks == 1 || fixedFull[i]);
      anyFixed |= bool(useFixed[i]);
    }
    int64_t rows = anyFixed ? (blocks - 1) * kRowBlock + lastRows : m;
    // Per calling thread: the executor issues one layer at a time, and the
    // pool's threads only read these.
    src = reinterpret_cast<const char *>(x);
    int64_t k = s.k;
    srcElem = s.srcType == dt::bf16 ? 2 : 4;
    if (s.srcType == dt::bf16) {
      std::vector<uint16_t> &xb = xBf16();
      xb.resize(size_t(rows * k));
      uint16_t *dstRows = xb.data();
      pool.parallelFor(m, 16, [&](int64_t b, int64_t e) {
        storeRow(x + b * k, dstRows + b * k, DType::BF16, (e - b) * k);
      });
      std::memset(dstRows + m * k, 0, size_t((rows - m) * k) * 2);
      src = reinterpret_cast<const char *>(dstRows);
    } else if (rows != m) {
      std::vector<float> &xp = xPad();
      xp.resize(size_t(rows * k));
      std::memcpy(xp.data(), x, size_t(m * k) * sizeof(float));
      std::memset(xp.data() + m * k, 0, size_t((rows - m) * k) * 4);
      src = reinterpret_cast<const char *>(xp.data());
    }
  }

  ~Tiles() {
    trimScratch(xBf16());
    trimScratch(xPad());
  }

  int64_t rowsOf(int64_t rb) const {
    return rb + 1 == blocks ? lastReal : kRowBlock;
  }

  /// Runs slice `si` on row block `rb`. With a fixed primitive the result
  /// is a dense [rows, width] block in the thread's scratch (returned; its
  /// first rowsOf(rb) rows are real); otherwise the runtime-M primitive
  /// writes the block's columns of `y` in place and null is returned.
  /// Throws dnnl::error.
  const float *run(size_t si, int64_t rb, float *y, int slot) const {
    dnnl::engine &eng = cpuEngine();
    thread_local dnnl::stream stream(cpuEngine());
    const State::Slice &sl = s.slices[si];
    const State::Width &wd = s.widths[sl.width];
    int64_t r0 = rb * kRowBlock;
    bool last = rb + 1 == blocks;
    bool fixed = useFixed[sl.width];
    const Prim &p = !fixed ? wd.runtimeM
                    : last ? fixedLast[sl.width]
                           : fixedFull[sl.width];
    int64_t r = !fixed ? rowsOf(rb) : last ? lastRows : kRowBlock;
    dnnl::memory srcMem({{r, s.k}, s.srcType, tag::ab}, eng,
                        const_cast<char *>(src + size_t(r0 * s.k) * srcElem));
    float *block = fixed ? static_cast<float *>(threadScratch(
                               slot, size_t(r * wd.width) * sizeof(float)))
                         : nullptr;
    dnnl::memory dstMem =
        fixed ? dnnl::memory({{r, wd.width}, dt::f32, tag::ab}, eng, block)
              : dnnl::memory(s.stridedDst(r, wd.width), eng,
                             y + r0 * s.n + sl.n0);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, srcMem},
        {DNNL_ARG_WEIGHTS, fixed ? sl.blocked : sl.raw},
        {DNNL_ARG_DST, dstMem}};
    if (s.hasBias)
      args.insert({DNNL_ARG_BIAS, sl.bias});
    if (p.scratch)
      args.insert({DNNL_ARG_SCRATCHPAD,
                   dnnl::memory({{int64_t(p.scratch)}, dt::u8, tag::a}, eng,
                                threadScratch(0, p.scratch))});
    p.p.execute(stream, args);
    stream.wait();
    return block;
  }
};

namespace {

/// Runs `body(b, e)` on the pool; the first dnnl::error becomes the status.
template <typename Fn>
Status runTiles(ThreadPool &pool, int64_t count, Fn &&body) {
  std::atomic<bool> failed{false};
  std::mutex errMu;
  std::string err;
  pool.parallelFor(count, 1, [&](int64_t b, int64_t e) {
    try {
      oneLibraryThread();
      body(b, e);
    } catch (const dnnl::error &ex) {
      if (!failed.exchange(true)) {
        std::lock_guard<std::mutex> lock(errMu);
        err = ex.what();
      }
    } catch (const std::bad_alloc &) {
      if (!failed.exchange(true)) {
        std::lock_guard<std::mutex> lock(errMu);
        err = "out of memory";
      }
    }
  });
  if (failed)
    return Status::error(std::string("oneDNN matmul failed: ") + err);
  return Status::success();
}

} // namespace

Status DnnlMatmul::run(const float *x, int64_t m, float *y,
                       ThreadPool &pool) const {
  State &s = *state;
  oneLibraryThread();
  Tiles tiles(s, x, m, pool);
  // Slice-major order, so the threads running at one time mostly share a
  // slice of the weights (one copy in a shared L2 when the vCPUs are
  // siblings).
  int64_t blocks = tiles.blocks;
  return runTiles(pool, int64_t(s.slices.size()) * blocks,
                  [&](int64_t b, int64_t e) {
                    for (int64_t t = b; t < e; ++t) {
                      size_t si = size_t(t / blocks);
                      int64_t rb = t % blocks;
                      const float *block = tiles.run(si, rb, y, 1);
                      if (!block)
                        continue;
                      const State::Slice &sl = s.slices[si];
                      int64_t width = s.widths[sl.width].width;
                      float *out = y + rb * kRowBlock * s.n + sl.n0;
                      for (int64_t row = 0; row < tiles.rowsOf(rb); ++row)
                        std::memcpy(out + row * s.n, block + row * width,
                                    size_t(width) * sizeof(float));
                    }
                  });
}

bool DnnlMatmul::gatedReady() const {
  const State &s = *state;
  if (!s.halves || s.hasBias)
    return false;
  for (const State::Width &w : s.widths)
    if (!w.blocked)
      return false;
  return true;
}

Status DnnlMatmul::runGated(const float *x, int64_t m, Activation act, float *h,
                            ThreadPool &pool) const {
  State &s = *state;
  if (!gatedReady())
    return Status::error("oneDNN matmul: not a gate/up weight in halves");
  oneLibraryThread();
  Tiles tiles(s, x, m, pool);
  if (!std::all_of(tiles.useFixed.begin(), tiles.useFixed.end(),
                   [](char c) { return c != 0; }))
    return Status::error("oneDNN matmul: no brgemm primitive for this M");
  int64_t blocks = tiles.blocks;
  int64_t f = s.n / 2;
  size_t pairs = s.slices.size() / 2;
  const RowKernels &rk = rowKernels();
  // A tile is a gate slice and the up slice with the same columns of the
  // activation, on one row block: both land in this thread's scratch and
  // h's columns are written from them, so the [M, 2F] gate/up output never
  // exists.
  return runTiles(pool, int64_t(pairs) * blocks, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      size_t pi = size_t(t / blocks);
      int64_t rb = t % blocks;
      const float *gate = tiles.run(pi, rb, nullptr, 1);
      const float *up = tiles.run(pi + pairs, rb, nullptr, 2);
      const State::Slice &sl = s.slices[pi];
      int64_t width = s.widths[sl.width].width;
      float *out = h + rb * kRowBlock * f + sl.n0;
      for (int64_t row = 0; row < tiles.rowsOf(rb); ++row)
        rk.gated(gate + row * width, up + row * width, out + row * f, width,
                 act);
    }
  });
}

} // namespace folio::cpu::detail
