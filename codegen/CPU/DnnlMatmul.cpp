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

} // namespace

struct DnnlMatmul::State {
  dnnl::matmul primitive;
  dnnl::memory weights;
  dnnl::memory bias; // empty when there is none
  bool hasBias = false;
  dt srcType = dt::f32;
  int64_t n = 0, k = 0;
};

DnnlMatmul::DnnlMatmul(std::unique_ptr<State> s) : state(std::move(s)) {}
DnnlMatmul::~DnnlMatmul() = default;

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
    thread_local std::vector<uint16_t> xBf16;
    void *src = const_cast<float *>(x);
    if (s.srcType == dt::bf16) {
      xBf16.resize(size_t(m * s.k));
      uint16_t *dstRows = xBf16.data();
      int64_t k = s.k;
      pool.parallelFor(m, 16, [&](int64_t b, int64_t e) {
        storeRow(x + b * k, dstRows + b * k, DType::BF16, (e - b) * k);
      });
      src = dstRows;
    }
    dnnl::memory srcMem({{m, s.k}, s.srcType, tag::ab}, eng, src);
    dnnl::memory dstMem({{m, s.n}, dt::f32, tag::ab}, eng, y);
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, srcMem},
                                                  {DNNL_ARG_WEIGHTS, s.weights},
                                                  {DNNL_ARG_DST, dstMem}};
    if (s.hasBias)
      args.insert({DNNL_ARG_BIAS, s.bias});
    s.primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN matmul failed: ") + e.what());
  }
  return Status::success();
}

} // namespace folio::cpu::detail
