//===- DynamicLibrary.cpp - Libraries loaded at run time ------------------===//

#include "runtime/Device/DynamicLibrary.h"

#include <dlfcn.h>

namespace folio::device {

Expected<void *> openLibrary(const std::string &path) {
  void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = ::dlerror();
    return Status::notFound("cannot load " + path + " (" +
                            (why ? why : "unknown reason") + ")");
  }
  return lib;
}

void *librarySymbol(void *library, const char *name) {
  return ::dlsym(library, name);
}

} // namespace folio::device
