//===- FakeCuda.cpp - A stand-in for libcuda.so.1 in tests ----------------===//
//
// The driver entry points probeCudaDriver resolves, answering as the
// environment says: FOLIO_FAKE_CUDA_INIT (cuInit's result, default 0),
// FOLIO_FAKE_CUDA_DEVICES (default 1) and FOLIO_FAKE_CUDA_CC (compute
// capability as major * 10 + minor, default 90). Tests load it through
// FOLIO_LIBCUDA_PATH.
//
//===----------------------------------------------------------------------===//

#include <cstdlib>
#include <cstring>

namespace {

int env(const char *name, int dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

} // namespace

extern "C" {

int cuInit(unsigned) { return env("FOLIO_FAKE_CUDA_INIT", 0); }

int cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}

int cuDeviceGetCount(int *n) {
  *n = env("FOLIO_FAKE_CUDA_DEVICES", 1);
  return 0;
}

int cuDeviceGet(int *dev, int ordinal) {
  *dev = ordinal;
  return 0;
}

int cuDeviceGetAttribute(int *v, int attr, int) {
  int cc = env("FOLIO_FAKE_CUDA_CC", 90);
  if (attr == 75)
    *v = cc / 10;
  else if (attr == 76)
    *v = cc % 10;
  else
    return 1; // CUDA_ERROR_INVALID_VALUE
  return 0;
}

int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", size_t(len));
  return 0;
}

int cuGetErrorName(int r, const char **name) {
  if (r == 100)
    *name = "CUDA_ERROR_NO_DEVICE";
  else if (r == 3)
    *name = "CUDA_ERROR_NOT_INITIALIZED";
  else
    return 1;
  return 0;
}

} // extern "C"
