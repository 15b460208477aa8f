//===- CublasLt.cpp - GEMMs through cuBLASLt, loaded at run time ----------===//

#include "runtime/Device/CublasLt.h"
#include "runtime/Device/DynamicLibrary.h"

#include <cstdlib>
#include <cstring>

namespace folio::device {

namespace lt {
// cublasLt.h, library_types.h and cublas_api.h values.
constexpr int kSuccess = 0;
constexpr int kInvalidValue = 7;       // CUBLAS_STATUS_INVALID_VALUE
constexpr int kNotSupported = 15;      // CUBLAS_STATUS_NOT_SUPPORTED
constexpr int kComputeF32 = 68;        // CUBLAS_COMPUTE_32F
constexpr int kF32 = 0;                // CUDA_R_32F
constexpr int kBF16 = 14;              // CUDA_R_16BF
constexpr int kF16 = 2;                // CUDA_R_16F
constexpr int kE4M3 = 28;              // CUDA_R_8F_E4M3
constexpr int kOpN = 0, kOpT = 1;      // cublasOperation_t
constexpr int kDescTransA = 3;         // CUBLASLT_MATMUL_DESC_TRANSA
constexpr int kDescTransB = 4;         // CUBLASLT_MATMUL_DESC_TRANSB
constexpr int kDescEpilogue = 7;       // CUBLASLT_MATMUL_DESC_EPILOGUE
constexpr int kDescBiasPointer = 8;    // CUBLASLT_MATMUL_DESC_BIAS_POINTER
constexpr int kDescBiasType = 26;      // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
constexpr int kDescAScalePointer = 17; // CUBLASLT_MATMUL_DESC_A_SCALE_POINTER
constexpr int kDescBScalePointer = 18; // CUBLASLT_MATMUL_DESC_B_SCALE_POINTER
constexpr int kDescAScaleMode = 31;    // CUBLASLT_MATMUL_DESC_A_SCALE_MODE
constexpr int kDescBScaleMode = 32;    // CUBLASLT_MATMUL_DESC_B_SCALE_MODE
// CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F: A's scales per row of D (the
// weight's n outputs), B's per column (x's m tokens).
constexpr int32_t kScaleOuterVec32F = 3;
constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4;
constexpr int kPrefMaxWorkspace = 1; // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES

struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};
} // namespace lt

struct CublasLtApi {
  std::string library;
  int (*create)(void **) = nullptr;
  int (*destroy)(void *) = nullptr;
  size_t (*getVersion)() = nullptr;
  int (*descCreate)(void **, int, int) = nullptr;
  int (*descDestroy)(void *) = nullptr;
  int (*descSet)(void *, int, const void *, size_t) = nullptr;
  int (*layoutCreate)(void **, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*layoutDestroy)(void *) = nullptr;
  int (*prefCreate)(void **) = nullptr;
  int (*prefDestroy)(void *) = nullptr;
  int (*prefSet)(void *, int, const void *, size_t) = nullptr;
  int (*heuristic)(void *, void *, void *, void *, void *, void *, void *, int,
                   lt::HeuristicResult *, int *) = nullptr;
  int (*matmul)(void *, void *, const void *, const void *, void *,
                const void *, void *, const void *, const void *, void *,
                void *, void *, const lt::Algo *, void *, size_t,
                void *) = nullptr;
  const char *(*statusName)(int) = nullptr; // optional
};

namespace {

std::string cublasLtLibrary() {
  if (const char *p = std::getenv("FOLIO_LIBCUBLASLT_PATH"); p && *p)
    return p;
  return "libcublasLt.so.13";
}

Expected<const CublasLtApi *> loadApi() {
  // Never closed nor destroyed, as the driver's table (CudaApi.cpp).
  static std::mutex *mu = new std::mutex;
  static auto *loaded = new std::map<std::string, std::unique_ptr<CublasLtApi>>;
  std::lock_guard<std::mutex> lock(*mu);
  std::string library = cublasLtLibrary();
  if (auto it = loaded->find(library); it != loaded->end())
    return static_cast<const CublasLtApi *>(it->second.get());
  Expected<void *> lib = openLibrary(library);
  if (!lib)
    return Status::notFound("no cuBLASLt: " + lib.status().message() +
                            "; it comes with the CUDA toolkit (or the "
                            "nvidia-cublas wheel)");
  auto api = std::make_unique<CublasLtApi>();
  api->library = library;
  EntryPoints entries(*lib);
  auto resolve = [&](auto &fn, const char *name) { entries.resolve(fn, name); };
  resolve(api->create, "cublasLtCreate");
  resolve(api->destroy, "cublasLtDestroy");
  resolve(api->getVersion, "cublasLtGetVersion");
  resolve(api->descCreate, "cublasLtMatmulDescCreate");
  resolve(api->descDestroy, "cublasLtMatmulDescDestroy");
  resolve(api->descSet, "cublasLtMatmulDescSetAttribute");
  resolve(api->layoutCreate, "cublasLtMatrixLayoutCreate");
  resolve(api->layoutDestroy, "cublasLtMatrixLayoutDestroy");
  resolve(api->prefCreate, "cublasLtMatmulPreferenceCreate");
  resolve(api->prefDestroy, "cublasLtMatmulPreferenceDestroy");
  resolve(api->prefSet, "cublasLtMatmulPreferenceSetAttribute");
  resolve(api->heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(api->matmul, "cublasLtMatmul");
  if (!entries.missing().empty())
    return Status::notFound("the cuBLASLt library " + library +
                            " lacks the entry points " + entries.missing());
  entries.optional(api->statusName, "cublasLtGetStatusName");
  const CublasLtApi *out = api.get();
  loaded->emplace(library, std::move(api));
  return out;
}

} // namespace

struct CublasLt::Plan {
  const CublasLtApi *api = nullptr;
  void *desc = nullptr, *a = nullptr, *b = nullptr, *d = nullptr;
  lt::Algo algo{};
  cu::DevicePtr bias = 0;               ///< the pointer the descriptor holds
  cu::DevicePtr aScale = 0, bScale = 0; ///< fp8: the scale pointers it holds
  ~Plan() {
    if (d)
      api->layoutDestroy(d);
    if (b)
      api->layoutDestroy(b);
    if (a)
      api->layoutDestroy(a);
    if (desc)
      api->descDestroy(desc);
  }
};

Status CublasLt::check(int status, const std::string &call,
                       const std::string &what) const {
  if (status == lt::kSuccess)
    return Status::ok();
  const char *name = api_->statusName ? api_->statusName(status) : nullptr;
  return Status::internal(
      "cuBLASLt (" + api_->library + "): " + call + " for " + what +
      " failed: " + (name ? std::string(name) + " (" : "status (") +
      std::to_string(status) + ")");
}

Expected<std::unique_ptr<CublasLt>> CublasLt::open(const CudaDevice &dev) {
  Expected<const CublasLtApi *> api = loadApi();
  if (!api)
    return api.status();
  if (Status s = dev.makeCurrent(); !s)
    return s;
  std::unique_ptr<CublasLt> lt(new CublasLt());
  lt->dev_ = &dev;
  lt->api_ = *api;
  if (Status s =
          lt->check((*api)->create(&lt->handle_), "cublasLtCreate", "a handle");
      !s)
    return s;
  Expected<DeviceBuffer> ws =
      dev.allocate(kWorkspaceBytes, "the cuBLASLt workspace");
  if (!ws)
    return ws.status();
  lt->workspace_ = std::move(*ws);
  return lt;
}

CublasLt::~CublasLt() {
  plans_.clear();
  if (handle_ && dev_->makeCurrent())
    api_->destroy(handle_);
}

size_t CublasLt::version() const { return api_->getVersion(); }
const std::string &CublasLt::library() const { return api_->library; }

Expected<CublasLt::Plan *> CublasLt::plan(int type, int64_t m, int64_t n,
                                          int64_t k, bool bias) const {
  auto key = std::make_tuple(type, m, n, k, bias);
  if (auto it = plans_.find(key); it != plans_.end())
    return it->second.get();
  const int operand = type; // x's and w's element type
  const bool fp8 = type == lt::kE4M3;
  const std::string what =
      std::string(type == lt::kF16    ? "an f16"
                  : type == lt::kBF16 ? "a bf16"
                                      : "an fp8 (e4m3, row-scaled)") +
      " GEMM of " + std::to_string(m) + " x " + std::to_string(k) + " by " +
      std::to_string(n) + " x " + std::to_string(k);
  auto p = std::make_unique<Plan>();
  p->api = api_;
  const CublasLtApi &a = *api_;
  Status s = check(a.descCreate(&p->desc, lt::kComputeF32, lt::kF32),
                   "cublasLtMatmulDescCreate", what);
  int32_t opT = lt::kOpT, opN = lt::kOpN;
  uint32_t epilogue = bias ? lt::kEpilogueBias : lt::kEpilogueDefault;
  int32_t biasType = lt::kF32;
  if (s)
    s = check(a.descSet(p->desc, lt::kDescTransA, &opT, sizeof opT),
              "setting TRANSA", what);
  if (s)
    s = check(a.descSet(p->desc, lt::kDescTransB, &opN, sizeof opN),
              "setting TRANSB", what);
  if (s)
    s = check(a.descSet(p->desc, lt::kDescEpilogue, &epilogue, sizeof epilogue),
              "setting the epilogue", what);
  if (s && bias)
    s = check(a.descSet(p->desc, lt::kDescBiasType, &biasType, sizeof biasType),
              "setting the bias type", what);
  int32_t outerVec = lt::kScaleOuterVec32F;
  if (s && fp8)
    s = check(
        a.descSet(p->desc, lt::kDescAScaleMode, &outerVec, sizeof outerVec),
        "setting A's scale mode", what);
  if (s && fp8)
    s = check(
        a.descSet(p->desc, lt::kDescBScaleMode, &outerVec, sizeof outerVec),
        "setting B's scale mode", what);
  // A library or device without row-scaled fp8 GEMMs refuses the mode: no
  // algorithm for this GEMM, which the caller runs another way.
  if (!s && fp8)
    return Status::notFound(s.message());
  // A: the [n, k] weight, column-major k x n, taken transposed; B: x, k x m;
  // D (and C): y, n x m.
  if (s)
    s = check(a.layoutCreate(&p->a, operand, uint64_t(k), uint64_t(n), k),
              "cublasLtMatrixLayoutCreate (A)", what);
  if (s)
    s = check(a.layoutCreate(&p->b, operand, uint64_t(k), uint64_t(m), k),
              "cublasLtMatrixLayoutCreate (B)", what);
  if (s)
    s = check(a.layoutCreate(&p->d, lt::kF32, uint64_t(n), uint64_t(m), n),
              "cublasLtMatrixLayoutCreate (D)", what);
  void *pref = nullptr;
  if (s)
    s = check(a.prefCreate(&pref), "cublasLtMatmulPreferenceCreate", what);
  uint64_t wsBytes = kWorkspaceBytes;
  if (s)
    s = check(a.prefSet(pref, lt::kPrefMaxWorkspace, &wsBytes, sizeof wsBytes),
              "setting the workspace", what);
  lt::HeuristicResult result{};
  int found = 0;
  if (s)
    s = check(a.heuristic(handle_, p->desc, p->a, p->b, p->d, p->d, pref, 1,
                          &result, &found),
              "cublasLtMatmulAlgoGetHeuristic", what);
  if (pref)
    a.prefDestroy(pref);
  if (!s)
    return fp8 ? Status::notFound(s.message()) : s;
  if (found < 1 || result.state != lt::kSuccess)
    return Status::notFound("cuBLASLt (" + a.library +
                            ") has no algorithm for " + what +
                            " on this device");
  p->algo = result.algo;
  Plan *out = p.get();
  plans_.emplace(key, std::move(p));
  return out;
}

namespace {

/// m, n and k of a GEMM `what` takes, all at least 1.
Status checkShape(const char *what, int64_t m, int64_t n, int64_t k) {
  if (m >= 1 && n >= 1 && k >= 1)
    return Status::ok();
  return Status::invalidArgument(
      std::string(what) + ": m, n and k must be at least 1, not " +
      std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k));
}

void *devicePointer(cu::DevicePtr d) {
  return reinterpret_cast<void *>(static_cast<uintptr_t>(d));
}

} // namespace

Status CublasLt::setPointer(Plan &p, int attr, cu::DevicePtr want,
                            cu::DevicePtr &held,
                            const std::string &what) const {
  if (held == want)
    return Status::ok();
  void *v = devicePointer(want);
  if (Status s = check(api_->descSet(p.desc, attr, &v, sizeof v),
                       "setting a pointer", what);
      !s)
    return s;
  held = want;
  return Status::ok();
}

int CublasLt::matmul(const Plan &p, cu::DevicePtr x, cu::DevicePtr w,
                     cu::DevicePtr y) const {
  const float alpha = 1.0f, beta = 0.0f;
  return api_->matmul(
      handle_, p.desc, &alpha, devicePointer(w), p.a, devicePointer(x), p.b,
      &beta, devicePointer(y), p.d, devicePointer(y), p.d, &p.algo,
      devicePointer(workspace_.ptr()), kWorkspaceBytes, dev_->stream());
}

Status CublasLt::linear(Half type, cu::DevicePtr x, cu::DevicePtr w,
                        cu::DevicePtr bias, cu::DevicePtr y, int64_t m,
                        int64_t n, int64_t k) const {
  if (Status s = checkShape("cuBLASLt linear", m, n, k); !s)
    return s;
  if (Status s = dev_->makeCurrent(); !s)
    return s;
  // One caller at a time: the plans are shared, and so is a plan's bias
  // pointer, which is set on its descriptor.
  std::lock_guard<std::mutex> lock(mu_);
  Expected<Plan *> p =
      plan(type == Half::F16 ? lt::kF16 : lt::kBF16, m, n, k, bias != 0);
  if (!p)
    return p.status();
  if (bias)
    if (Status s = setPointer(**p, lt::kDescBiasPointer, bias, (*p)->bias,
                              "a 16-bit GEMM's bias");
        !s)
      return s;
  return check(matmul(**p, x, w, y), "cublasLtMatmul", "a 16-bit GEMM");
}

Status CublasLt::linearFp8(cu::DevicePtr x8, cu::DevicePtr xScale,
                           cu::DevicePtr w8, cu::DevicePtr wScale,
                           cu::DevicePtr y, int64_t m, int64_t n,
                           int64_t k) const {
  if (Status s = checkShape("cuBLASLt fp8 linear", m, n, k); !s)
    return s;
  if (Status s = dev_->makeCurrent(); !s)
    return s;
  std::lock_guard<std::mutex> lock(mu_);
  Expected<Plan *> p = plan(lt::kE4M3, m, n, k, false);
  if (!p)
    return p.status();
  // The scale vectors are the descriptor's, set when they change (a
  // capture records the GEMM with the pointers of its call).
  if (Status s = setPointer(**p, lt::kDescAScalePointer, wScale, (*p)->aScale,
                            "an fp8 GEMM's weight scales");
      !s)
    return s;
  if (Status s = setPointer(**p, lt::kDescBScalePointer, xScale, (*p)->bScale,
                            "an fp8 GEMM's x scales");
      !s)
    return s;
  const int status = matmul(**p, x8, w8, y);
  Status s = check(status, "cublasLtMatmul", "an fp8 GEMM");
  // Refused arguments (an alignment or a scale layout this library's fp8
  // kernels do not take) enqueue nothing: no algorithm, as above. A failed
  // execution stays an error.
  if (status == lt::kInvalidValue || status == lt::kNotSupported)
    return Status::notFound(s.message());
  return s;
}

} // namespace folio::device
