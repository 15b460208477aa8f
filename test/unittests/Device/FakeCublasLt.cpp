//===- FakeCublasLt.cpp - cuBLASLt's matmul on the host, for tests --------===//
//
// The entry points runtime/Device/CublasLt.cpp calls, with the semantics
// cublasLt.h documents, over FakeCudaDevice's host memory: column-major
// matrices with leading dimensions, TRANSA / TRANSB, D = alpha op(A) op(B)
// + beta C, and the BIAS epilogue adding bias[row] to every column of D.
// A and B may be bf16, f16 or f32, C and D f32, compute and scale f32; or
// A and B e4m3 with f32 scale vectors (A_SCALE_MODE / B_SCALE_MODE scalar
// or OUTER_VEC_32F, the SCALE_POINTERs), D f32, no bias, k a multiple of 16
// (else the heuristic finds no algorithm); anything
// else is CUBLAS_STATUS_NOT_SUPPORTED, malformed attributes and layouts
// CUBLAS_STATUS_INVALID_VALUE, so a caller that sets up the GEMM wrongly
// fails here as it would on a GPU. Tests load it through
// FOLIO_LIBCUBLASLT_PATH. A GEMM on a stream goes through the fake driver
// (FOLIO_LIBCUDA_PATH, folioFakeCudaEnqueue), so a stream being captured
// records it into the graph instead of running it.
// FOLIO_FAKE_CUBLASLT_NO_ALGORITHM=K makes the heuristic find no algorithm
// for GEMMs of inner dimension K (as a library without a kernel for a
// shape would); FOLIO_FAKE_CUBLASLT_NO_FP8=1 refuses the fp8 scale modes
// (a library or device without row-scaled fp8 GEMMs).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/DType.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 7, kNotSupported = 15;
constexpr int kF32 = 0, kF16 = 2, kBF16 = 14, kE4M3 = 28, kCompute32F = 68;
constexpr int32_t kScaleScalar = 0, kScaleOuterVec = 3;

struct Desc {
  int transA = 0, transB = 0;
  uint32_t epilogue = 1;
  const float *bias = nullptr;
  int biasType = kF32;
  const float *aScale = nullptr, *bScale = nullptr;
  int32_t aScaleMode = kScaleScalar, bScaleMode = kScaleScalar;
};

struct Layout {
  int type;
  uint64_t rows, cols;
  int64_t ld;
};

float element(const Layout &l, const void *data, uint64_t r, uint64_t c) {
  uint64_t i = r + c * uint64_t(l.ld);
  if (l.type == kF32)
    return static_cast<const float *>(data)[i];
  if (l.type == kE4M3)
    return folio::cpu::fp8E4M3ToFloat(static_cast<const uint8_t *>(data)[i]);
  uint16_t h = static_cast<const uint16_t *>(data)[i];
  return l.type == kBF16 ? folio::cpu::bf16ToFloat(h)
                         : folio::cpu::f16ToFloat(h);
}

template <typename T> bool read(const void *buf, size_t size, T &out) {
  if (!buf || size != sizeof(T))
    return false;
  std::memcpy(&out, buf, sizeof(T));
  return true;
}

/// op(X)'s rows and columns.
void opShape(const Layout &l, int op, uint64_t &rows, uint64_t &cols) {
  rows = op ? l.cols : l.rows;
  cols = op ? l.rows : l.cols;
}

/// One GEMM, everything it reads copied when it was enqueued (a graph
/// replays it after the descriptors may have changed).
struct Gemm {
  Desc d;
  Layout al, bl, cl, dl;
  float alpha, beta;
  const void *a, *b, *c;
  float *out;
};

/// GEMMs run so far (a captured one when its graph is launched), and the
/// fp8 ones among them: tests check which path an executor took.
long matmuls = 0, fp8Matmuls = 0;

/// Scale `i` of a scale pointer in `mode` (1 where none is set).
float scaleAt(const float *scale, int32_t mode, uint64_t i) {
  if (!scale)
    return 1.0f;
  return mode == kScaleOuterVec ? scale[i] : scale[0];
}

void runGemm(const void *p) {
  ++matmuls;
  Gemm g;
  std::memcpy(&g, p, sizeof g);
  if (g.al.type == kE4M3)
    ++fp8Matmuls;
  uint64_t m = g.dl.rows, n = g.dl.cols, k = g.d.transA ? g.al.rows : g.al.cols;
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (uint64_t l = 0; l < k; ++l) {
        float x =
            g.d.transA ? element(g.al, g.a, l, i) : element(g.al, g.a, i, l);
        float y =
            g.d.transB ? element(g.bl, g.b, j, l) : element(g.bl, g.b, l, j);
        sum += x * y;
      }
      float v = g.alpha * scaleAt(g.d.aScale, g.d.aScaleMode, i) *
                scaleAt(g.d.bScale, g.d.bScaleMode, j) * sum;
      if (g.beta != 0.0f)
        v += g.beta * element(g.cl, g.c, i, j);
      if (g.d.epilogue == 4)
        v += g.d.bias[i];
      g.out[i + j * uint64_t(g.dl.ld)] = v;
    }
}

using EnqueueFn = int (*)(void *, void (*)(const void *), const void *, size_t);

/// The fake driver's folioFakeCudaEnqueue (it is loaded before this
/// library is used), or null.
EnqueueFn driverEnqueue() {
  static EnqueueFn fn = [] {
    const char *path = std::getenv("FOLIO_LIBCUDA_PATH");
    void *lib = path ? ::dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return lib ? reinterpret_cast<EnqueueFn>(
                     ::dlsym(lib, "folioFakeCudaEnqueue"))
               : nullptr;
  }();
  return fn;
}

} // namespace

extern "C" {

int cublasLtCreate(void **handle) {
  static int h;
  *handle = &h;
  return kSuccess;
}
int cublasLtDestroy(void *) { return kSuccess; }
size_t cublasLtGetVersion() { return 130100; }
const char *cublasLtGetStatusName(int s) {
  return s == kInvalidValue   ? "CUBLAS_STATUS_INVALID_VALUE"
         : s == kNotSupported ? "CUBLAS_STATUS_NOT_SUPPORTED"
                              : "CUBLAS_STATUS_UNKNOWN";
}

int cublasLtMatmulDescCreate(void **desc, int compute, int scale) {
  if (compute != kCompute32F || scale != kF32)
    return kNotSupported;
  *desc = new Desc;
  return kSuccess;
}
int cublasLtMatmulDescDestroy(void *desc) {
  delete static_cast<Desc *>(desc);
  return kSuccess;
}
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf,
                                   size_t size) {
  Desc &d = *static_cast<Desc *>(desc);
  bool ok;
  switch (attr) {
  case 3: // TRANSA
    ok = read(buf, size, d.transA) && (d.transA == 0 || d.transA == 1);
    break;
  case 4: // TRANSB
    ok = read(buf, size, d.transB) && (d.transB == 0 || d.transB == 1);
    break;
  case 7: // EPILOGUE: DEFAULT or BIAS
    ok = read(buf, size, d.epilogue);
    if (ok && d.epilogue != 1 && d.epilogue != 4)
      return kNotSupported;
    break;
  case 8: // BIAS_POINTER
    ok = read(buf, size, d.bias);
    break;
  case 26: // BIAS_DATA_TYPE
    ok = read(buf, size, d.biasType);
    if (ok && d.biasType != kF32)
      return kNotSupported;
    break;
  case 17: // A_SCALE_POINTER
    ok = read(buf, size, d.aScale);
    break;
  case 18: // B_SCALE_POINTER
    ok = read(buf, size, d.bScale);
    break;
  case 31: // A_SCALE_MODE
  case 32: // B_SCALE_MODE
  {
    int32_t mode = 0;
    ok = read(buf, size, mode);
    if (ok && mode != kScaleScalar && mode != kScaleOuterVec)
      return kNotSupported;
    if (ok && mode == kScaleOuterVec &&
        std::getenv("FOLIO_FAKE_CUBLASLT_NO_FP8"))
      return kNotSupported;
    (attr == 31 ? d.aScaleMode : d.bScaleMode) = mode;
    break;
  }
  default:
    return kNotSupported;
  }
  return ok ? kSuccess : kInvalidValue;
}

int cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows,
                               uint64_t cols, int64_t ld) {
  if (type != kF32 && type != kBF16 && type != kF16 && type != kE4M3)
    return kNotSupported;
  if (rows == 0 || cols == 0 || ld < int64_t(rows))
    return kInvalidValue;
  *layout = new Layout{type, rows, cols, ld};
  return kSuccess;
}
int cublasLtMatrixLayoutDestroy(void *layout) {
  delete static_cast<Layout *>(layout);
  return kSuccess;
}

int cublasLtMatmulPreferenceCreate(void **pref) {
  *pref = new uint64_t(0);
  return kSuccess;
}
int cublasLtMatmulPreferenceDestroy(void *pref) {
  delete static_cast<uint64_t *>(pref);
  return kSuccess;
}
int cublasLtMatmulPreferenceSetAttribute(void *pref, int attr, const void *buf,
                                         size_t size) {
  if (attr != 1) // MAX_WORKSPACE_BYTES
    return kNotSupported;
  return read(buf, size, *static_cast<uint64_t *>(pref)) ? kSuccess
                                                         : kInvalidValue;
}

struct HeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

/// Whether op(A) op(B) + C -> D is consistent and supported.
int checkShapes(const Desc &d, const Layout &a, const Layout &b,
                const Layout &c, const Layout &dl) {
  if (a.type != b.type || c.type != kF32 || dl.type != kF32)
    return kNotSupported;
  // fp8: the "TN" layout only, and no bias with an f32 D; scales are only
  // for fp8.
  if (a.type == kE4M3 && (d.transA != 1 || d.transB != 0 || d.epilogue != 1))
    return kNotSupported;
  if (a.type != kE4M3 &&
      (d.aScale || d.bScale || d.aScaleMode != kScaleScalar ||
       d.bScaleMode != kScaleScalar))
    return kNotSupported;
  uint64_t am, ak, bk, bn;
  opShape(a, d.transA, am, ak);
  opShape(b, d.transB, bk, bn);
  if (ak != bk || dl.rows != am || dl.cols != bn || c.rows != dl.rows ||
      c.cols != dl.cols)
    return kInvalidValue;
  return kSuccess;
}

int cublasLtMatmulAlgoGetHeuristic(void *, void *desc, void *a, void *b,
                                   void *c, void *d, void *, int requested,
                                   HeuristicResult *results, int *found) {
  *found = 0;
  if (requested < 1)
    return kInvalidValue;
  int s = checkShapes(*static_cast<Desc *>(desc), *static_cast<Layout *>(a),
                      *static_cast<Layout *>(b), *static_cast<Layout *>(c),
                      *static_cast<Layout *>(d));
  if (s != kSuccess)
    return s;
  if (const char *none = std::getenv("FOLIO_FAKE_CUBLASLT_NO_ALGORITHM"))
    if (uint64_t(std::atoll(none)) == static_cast<Layout *>(a)->rows)
      return kSuccess; // found stays 0
  // fp8 operands need 16-byte aligned columns (k a multiple of 16).
  if (static_cast<Layout *>(a)->type == kE4M3 &&
      static_cast<Layout *>(a)->rows % 16 != 0)
    return kSuccess;
  results[0] = HeuristicResult{};
  results[0].algo[0] = 42;
  results[0].state = kSuccess;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return kSuccess;
}

long folioFakeCublasLtMatmuls() { return matmuls; }
long folioFakeCublasLtFp8Matmuls() { return fp8Matmuls; }

int cublasLtMatmul(void *, void *desc, const void *alpha, const void *a,
                   void *aDesc, const void *b, void *bDesc, const void *beta,
                   const void *c, void *cDesc, void *dOut, void *dDesc,
                   const HeuristicResult *algo, void *, size_t, void *stream) {
  const Desc &d = *static_cast<Desc *>(desc);
  const Layout &al = *static_cast<Layout *>(aDesc),
               &bl = *static_cast<Layout *>(bDesc),
               &cl = *static_cast<Layout *>(cDesc),
               &dl = *static_cast<Layout *>(dDesc);
  if (!algo || algo->algo[0] != 42)
    return kInvalidValue; // not an algorithm the heuristic gave
  if (int s = checkShapes(d, al, bl, cl, dl); s != kSuccess)
    return s;
  if (d.epilogue == 4 && !d.bias)
    return kInvalidValue;
  if (d.aScaleMode == kScaleOuterVec && !d.aScale)
    return kInvalidValue;
  if (d.bScaleMode == kScaleOuterVec && !d.bScale)
    return kInvalidValue;
  Gemm g{d, al, bl, cl, dl, 0.0f, 0.0f, a, b, c, static_cast<float *>(dOut)};
  std::memcpy(&g.alpha, alpha, 4);
  std::memcpy(&g.beta, beta, 4);
  if (!stream) {
    runGemm(&g);
    return kSuccess;
  }
  EnqueueFn enqueue = driverEnqueue();
  if (!enqueue)
    return kInvalidValue; // a stream, but no fake driver to order it on
  return enqueue(stream, &runGemm, &g, sizeof g) == 0 ? kSuccess
                                                      : kInvalidValue;
}

} // extern "C"
