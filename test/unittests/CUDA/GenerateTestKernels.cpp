//===- GenerateTestKernels.cpp - Emits the kernels the emulation tests run ===//
//
// Usage: GenerateTestKernels kv_write|paged_decode|paged_prefill|rows|linear
//        OUT
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

namespace {

/// Emits every spec of `specs` with `emit` into text, and a table `name`
/// of {key, entry point} for kernels taking `argsType`.
template <typename Spec, typename EmitFn>
folio::cpu::Status
emitTable(const std::vector<Spec> &specs, EmitFn emit, const std::string &name,
          const std::string &argsType, std::string &text, std::string &table) {
  table += "struct " + name + " {\n  const char *key;\n  void (*kernel)(" +
           "folio_cuda::" + argsType + ");\n};\nstatic const " + name + " k" +
           name + "[] = {\n";
  for (const Spec &s : specs) {
    GeneratedKernel k;
    if (auto st = emit(s, k); !st.ok())
      return st;
    text += k.source;
    table += "    {\"" + k.key + "\", &" + k.name + "},\n";
  }
  table += "};\n";
  return folio::cpu::Status::success();
}

} // namespace

int main(int argc, char **argv) {
  std::string kind = argc == 3 ? argv[1] : "";
  if (kind != "kv_write" && kind != "paged_decode" && kind != "paged_prefill" &&
      kind != "rows" && kind != "linear") {
    std::cerr << "usage: GenerateTestKernels "
                 "kv_write|paged_decode|paged_prefill|rows|linear OUT\n";
    return 2;
  }
  std::string text, table;
  auto fail = [](const folio::cpu::Status &st) {
    std::cerr << "GenerateTestKernels: " << st.message() << "\n";
    return 1;
  };
  if (kind == "paged_prefill" || kind == "rows" || kind == "linear") {
    folio::cpu::Status st = folio::cpu::Status::success();
    if (kind == "linear") {
      st = emitTable(test::linearVariants(), emitLinear, "FolioTestLinear",
                     "LinearArgs", text, table);
    } else if (kind == "paged_prefill") {
      st = emitTable(test::pagedPrefillVariants(), emitPagedPrefill,
                     "FolioTestPagedPrefill", "PagedPrefillArgs", text, table);
    } else {
      st = emitTable(test::rowKernelVariants(), emitRowKernel, "FolioTestRow",
                     "RowArgs", text, table);
      if (st.ok())
        st = emitTable(test::rotaryVariants(), emitRotary, "FolioTestRotary",
                       "RotaryArgs", text, table);
      if (st.ok())
        st = emitTable(test::gatherVariants(), emitGather, "FolioTestGather",
                       "GatherArgs", text, table);
      if (st.ok())
        st = emitTable(test::sampleVariants(), emitSample, "FolioTestSample",
                       "SampleArgs", text, table);
      if (st.ok())
        st = emitTable(test::castVariants(), emitCast, "FolioTestCast",
                       "CastArgs", text, table);
      if (st.ok())
        st = emitTable(test::linearFormVariants(), emitLinear,
                       "FolioTestDequant", "LinearArgs", text, table);
    }
    if (!st.ok())
      return fail(st);
    std::ofstream out(argv[2]);
    out << text << "\n// ---- test tables ----\n" << table;
    return out.good() ? 0 : 1;
  }
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
