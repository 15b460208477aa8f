//===- GenerateTestKernels.cpp - Emits the kernels the emulation tests run ===//
//
// Usage: GenerateTestKernels kv_write|paged_decode OUT
// Writes every variant of TestVariants.h of that kind into OUT, one
// translation unit's worth (compiling dominates the tests' cost), followed
// by a table from canonical key to entry point.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emitter.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

using namespace folio::cuda;

int main(int argc, char **argv) {
  std::string kind = argc == 3 ? argv[1] : "";
  if (kind != "kv_write" && kind != "paged_decode") {
    std::cerr << "usage: GenerateTestKernels kv_write|paged_decode OUT\n";
    return 2;
  }
  std::string text, table;
  auto fail = [](const folio::cpu::Status &st) {
    std::cerr << "GenerateTestKernels: " << st.message() << "\n";
    return 1;
  };
  if (kind == "kv_write") {
    table = "struct FolioTestKVWrite {\n"
            "  const char *key;\n"
            "  void (*kernel)(folio_cuda::KVWriteArgs);\n"
            "};\n"
            "static const FolioTestKVWrite kFolioTestKVWrite[] = {\n";
    for (const KVWriteSpec &s : test::kvWriteVariants()) {
      GeneratedKernel k;
      if (auto st = emitKVWrite(s, k); !st.ok())
        return fail(st);
      text += k.source;
      table += "    {\"" + k.key + "\", &" + k.name + "},\n";
    }
  } else {
    table = "struct FolioTestPagedDecode {\n"
            "  const char *key;\n"
            "  void (*main)(folio_cuda::PagedDecodeArgs);\n"
            "  void (*combine)(folio_cuda::PagedDecodeArgs);\n"
            "};\n"
            "static const FolioTestPagedDecode kFolioTestPagedDecode[] = {\n";
    for (const PagedDecodeSpec &s : test::pagedDecodeVariants()) {
      GeneratedKernel main, combine;
      if (auto st = emitPagedDecode(s, main, combine); !st.ok())
        return fail(st);
      text += main.source + combine.source;
      table += "    {\"" + main.key + "\", &" + main.name + ", &" +
               combine.name + "},\n";
    }
  }
  std::ofstream out(argv[2]);
  out << text << "\n// ---- test table ----\n" << table << "};\n";
  return out.good() ? 0 : 1;
}
