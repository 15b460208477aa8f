//===- PtxasReportTest.cpp - ptxas's verbose report, parsed ---------------===//
//
// The logs under ptxas-logs/ are NVRTC logs captured from CUDA 13's ptxas
// (--ptxas-options=-v): one generated kernel, two entries in one log, and a
// kernel that spills and calls a non-inlined device function.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/NVRTC/PtxasReport.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace folio::cuda::test {
namespace {

std::string readLog(const std::string &name) {
  std::ifstream in(std::string(FOLIO_SOURCE_DIR) +
                   "/test/unittests/CUDA/ptxas-logs/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

TEST(PtxasReport, OneGeneratedKernel) {
  std::string log = readLog("paged-decode-sm_80.log");
  KernelResources r;
  ASSERT_TRUE(parsePtxasReport(
      log, "folio_paged_decode_int8_g64_d128_b16_kv2_q4_p256_t128", "sm_80",
      r));
  EXPECT_EQ(r.registers, 54);
  EXPECT_EQ(r.barriers, 1);
  EXPECT_EQ(r.sharedBytes, 32);
  EXPECT_EQ(r.stackFrameBytes, 0);
  EXPECT_EQ(r.spillStoreBytes, 0);
  EXPECT_EQ(r.spillLoadBytes, 0);
}

// Each entry's own figures, not the first entry's.
TEST(PtxasReport, TwoEntriesInOneLog) {
  std::string log = readLog("two-entries-sm_89.log");
  KernelResources main, combine;
  ASSERT_TRUE(parsePtxasReport(
      log, "folio_paged_decode_int8_g64_d128_b16_kv2_q4_p256_t128", "sm_89",
      main));
  ASSERT_TRUE(parsePtxasReport(log, "folio_paged_decode_combine_d128_t128",
                               "sm_89", combine));
  EXPECT_EQ(main.registers, 54);
  EXPECT_EQ(main.sharedBytes, 32);
  EXPECT_EQ(combine.registers, 40);
  EXPECT_EQ(combine.barriers, 0);
  // ptxas lists no smem for a kernel without static shared memory.
  EXPECT_EQ(combine.sharedBytes, 0);
}

// Spills are the entry's own; the device function's properties, listed
// after the entry, do not overwrite them.
TEST(PtxasReport, SpillsAndADeviceFunction) {
  std::string log = readLog("spills-device-function-sm_86.log");
  KernelResources r;
  ASSERT_TRUE(parsePtxasReport(log, "folio_spilly", "sm_86", r));
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.stackFrameBytes, 688);
  EXPECT_EQ(r.spillStoreBytes, 588);
  EXPECT_EQ(r.spillLoadBytes, 788);
  EXPECT_EQ(r.sharedBytes, 1024);
  KernelResources other;
  ASSERT_TRUE(parsePtxasReport(log, "folio_other", "", other));
  EXPECT_EQ(other.registers, 8);
  EXPECT_EQ(other.spillStoreBytes, 0);
}

TEST(PtxasReport, AbsentKernelOrArchLeavesTheFiguresAlone) {
  std::string log = readLog("two-entries-sm_89.log");
  KernelResources r;
  r.registers = 7;
  EXPECT_FALSE(parsePtxasReport(log, "folio_missing", "sm_89", r));
  EXPECT_FALSE(parsePtxasReport(log, "folio_paged_decode_combine_d128_t128",
                                "sm_90a", r));
  // A prefix of a name is another kernel.
  EXPECT_FALSE(parsePtxasReport(log, "folio_paged_decode", "", r));
  EXPECT_EQ(r.registers, 7);
  EXPECT_FALSE(parsePtxasReport("", "folio_spilly", "", r));
}

// CRLF line ends and a report without a properties line still parse.
TEST(PtxasReport, CarriageReturnsAndMissingProperties) {
  std::string log = "ptxas info    : Compiling entry function 'k' for "
                    "'sm_90a'\r\nptxas info    : Used 12 registers, used 0 "
                    "barriers, 4096 bytes smem\r\n";
  KernelResources r;
  ASSERT_TRUE(parsePtxasReport(log, "k", "sm_90a", r));
  EXPECT_EQ(r.registers, 12);
  EXPECT_EQ(r.sharedBytes, 4096);
  EXPECT_EQ(r.spillStoreBytes, -1);
  EXPECT_EQ(r.stackFrameBytes, -1);
}

} // namespace
} // namespace folio::cuda::test
