//===- EmitCuda.cpp - folioc --emit=cuda
//-----------------------------------===//

#include "tools/folioc/EmitCuda.h"

#include "compiler/Plan/CudaKernels.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace folio::tools {

Status emitCudaKernels(const plan::Plan &plan, const std::string &arch,
                       const std::string &dir, EmitCudaResult &result) {
  if (!cuda::isSupportedArch(arch)) {
    std::string list;
    for (const std::string &a : cuda::supportedArchs())
      list += (list.empty() ? "" : ", ") + a;
    return Status::invalidArgument("--emit=cuda: --target=" + arch +
                                   " is not a GPU target; supported: " + list);
  }
  std::vector<compiler::PlannedCudaKernel> planned;
  if (Status s =
          compiler::collectAllCudaKernels(plan, planned, result.notGenerated);
      !s)
    return s;
  std::vector<cuda::GeneratedKernel> kernels;
  for (const compiler::PlannedCudaKernel &k : planned)
    kernels.push_back(k.kernel);

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::invalidArgument("--emit=cuda: cannot create directory '" +
                                   dir + "': " + ec.message());
  for (const cuda::GeneratedKernel &k : kernels) {
    std::string file = k.name + ".cu";
    std::filesystem::path path = std::filesystem::path(dir) / file;
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out << "// Target: " << arch
          << " (compile with --gpu-architecture=" << arch << " --std=c++17)\n"
          << k.source;
      if (!out.good())
        return Status::invalidArgument("--emit=cuda: cannot write '" +
                                       tmp.string() + "'");
    }
    std::filesystem::rename(tmp, path, ec); // atomic: no half-written file
    if (ec)
      return Status::invalidArgument("--emit=cuda: cannot write '" +
                                     path.string() + "': " + ec.message());
    result.files.push_back(file);
  }
  return Status::ok();
}

} // namespace folio::tools
