//===- KernelStructure.h - Kernels that share their code --------*- C++ -*-===//
//
// The NVRTC tests compile every kernel for one arch and one kernel per
// structure for the others, to keep their time to seconds. A structure is
// a canonical key with its numeric parameters blanked (and the template
// hash dropped): kernels of one structure are the same code with other
// constants, which the spec checks bound. Cache types, labels, programs
// and modes are not numbers, so they stay apart.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_KERNELSTRUCTURE_H
#define FOLIO_TEST_UNITTESTS_CUDA_KERNELSTRUCTURE_H

#include <cctype>
#include <string>

namespace folio::cuda::test {

inline std::string kernelStructure(const std::string &key) {
  std::string out;
  size_t at = 0;
  while (at <= key.size()) {
    size_t end = key.find(';', at);
    if (end == std::string::npos)
      end = key.size();
    std::string part = key.substr(at, end - at);
    size_t eq = part.find('=');
    if (part.rfind("templates=", 0) != 0) {
      bool numeric = eq != std::string::npos && eq + 1 < part.size();
      for (size_t i = eq + 1; numeric && i < part.size(); ++i)
        numeric = std::isdigit(static_cast<unsigned char>(part[i])) != 0;
      out += (numeric ? part.substr(0, eq + 1) : part) + ";";
    }
    at = end + 1;
  }
  return out;
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_KERNELSTRUCTURE_H
