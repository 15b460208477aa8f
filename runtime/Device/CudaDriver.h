//===- CudaDriver.h - The CUDA driver, loaded at run time -------*- C++ -*-===//
//
// The runtime never links the CUDA driver: one binary runs with or without
// a GPU. probeCudaDriver() dlopens libcuda.so.1, initializes it and lists
// the devices with their compute capability; every failure says what is
// missing (the library, a symbol, cuInit, a device). The environment
// variable FOLIO_LIBCUDA_PATH names another library to load instead: it is
// for tests only (a fake driver, or a path that does not exist).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_CUDADRIVER_H
#define FOLIO_RUNTIME_DEVICE_CUDADRIVER_H

#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::device {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0; ///< compute capability
};

struct CudaDriverInfo {
  std::string library;   ///< what was loaded
  int driverVersion = 0; ///< cuDriverGetVersion, e.g. 13000
  std::vector<CudaDeviceInfo> devices;
};

/// "libcuda.so.1", or $FOLIO_LIBCUDA_PATH when set (tests only).
std::string cudaDriverLibrary();

/// Loads and initializes the driver and lists its devices; an error when
/// the library, one of its entry points, its initialization or any device
/// is missing. The library stays loaded for the process's lifetime.
Expected<CudaDriverInfo> probeCudaDriver();

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_CUDADRIVER_H
