//===- DynamicLibrary.h - Libraries loaded at run time ----------*- C++ -*-===//
//
// The CUDA driver and cuBLASLt are loaded with dlopen, never linked, so one
// binary runs with or without them. A library opened here stays loaded for
// the process's lifetime (the driver keeps process-wide state, and tables
// of its entry points outlive every caller).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_DYNAMICLIBRARY_H
#define FOLIO_RUNTIME_DEVICE_DYNAMICLIBRARY_H

#include "runtime/Support/Status.h"

#include <string>
#include <type_traits>

namespace folio::device {

/// dlopen(path); an error "cannot load PATH (why)".
Expected<void *> openLibrary(const std::string &path);

/// Looks up a symbol of an open library (null when absent).
void *librarySymbol(void *library, const char *name);

/// Resolves entry points into function pointers, remembering the names it
/// did not find.
class EntryPoints {
public:
  explicit EntryPoints(void *library) : library(library) {}
  template <typename Fn> void resolve(Fn &fn, const char *name) {
    static_assert(std::is_pointer_v<Fn>);
    fn = reinterpret_cast<Fn>(librarySymbol(library, name));
    if (!fn)
      missing_ += (missing_.empty() ? "" : ", ") + std::string(name);
  }
  /// An entry point callers can do without: null when absent.
  template <typename Fn> void optional(Fn &fn, const char *name) {
    fn = reinterpret_cast<Fn>(librarySymbol(library, name));
  }
  /// "cuInit, cuDeviceGet" (empty when all were found).
  const std::string &missing() const { return missing_; }

private:
  void *library;
  std::string missing_;
};

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_DYNAMICLIBRARY_H
