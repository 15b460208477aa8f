//===- GenerateModelKernels.cpp - The models' kernels for the emulation ---===//
//
// Usage: GenerateModelKernels SOURCE_ROOT ATTENTION_OUT OTHER_OUT
// Compiles the models of ModelKernels.h for sm_90a and sm_80 (the fp8 and
// int8 cache sets) and writes every distinct kernel, kv_write and attention
// into ATTENTION_OUT and the rest into OTHER_OUT, each followed by its
// table (ModelKernelTable.h), to be compiled as host C++ against the
// emulation: two translation units, so that they compile in parallel.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/CUDA/ModelKernels.h"

#include <fstream>
#include <iostream>

using namespace folio::cuda;

int main(int argc, char **argv) {
  if (argc != 4) {
    std::cerr << "usage: GenerateModelKernels SOURCE_ROOT ATTENTION_OUT "
                 "OTHER_OUT\n";
    return 2;
  }
  std::vector<std::string> errors;
  auto kernels = test::modelKernels(argv[1], "sm_90a", errors);
  for (auto &[name, k] : test::modelKernels(argv[1], "sm_80", errors))
    kernels.emplace(name, k);
  for (const std::string &e : errors)
    std::cerr << "GenerateModelKernels: " << e << "\n";
  if (!errors.empty())
    return 1;
  std::string text[2], table[2];
  for (const auto &[name, k] : kernels) {
    bool attention = std::holds_alternative<KVWriteSpec>(k.spec) ||
                     std::holds_alternative<PagedDecodeSpec>(k.spec) ||
                     std::holds_alternative<PagedDecodeCombineSpec>(k.spec) ||
                     std::holds_alternative<PagedPrefillSpec>(k.spec);
    int part = attention ? 0 : 1;
    text[part] += k.kernel.source;
    table[part] += "    {\"" + name + "\", reinterpret_cast<void *>(&" + name +
                   "), &emulate<folio_cuda::" + argsTypeName(k.spec) +
                   ">, sizeof(folio_cuda::" + argsTypeName(k.spec) + ")},\n";
  }
  const char *accessor[2] = {"modelAttentionKernels", "modelOtherKernels"};
  for (int part = 0; part < 2; ++part) {
    std::ofstream out(argv[2 + part]);
    out << text[part] << "\n// ---- table ----\n"
        << "#include \"test/unittests/CUDA/FakeDriver.h\"\n"
        << "#include \"test/unittests/CUDA/ModelKernelTable.h\"\n"
        << "namespace folio::cuda::test {\n"
        << "static const ModelKernelEntry kEntries[] = {\n"
        << table[part] << "};\n"
        << "const ModelKernelEntry *" << accessor[part] << "(size_t &count) {\n"
        << "  count = sizeof(kEntries) / sizeof(kEntries[0]);\n"
        << "  return kEntries;\n}\n} // namespace folio::cuda::test\n";
    if (!out.good())
      return 1;
  }
  return 0;
}
