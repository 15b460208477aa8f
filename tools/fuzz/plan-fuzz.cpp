//===- plan-fuzz.cpp - .folio plans through load and one step -------------===//
//
// libFuzzer target: each input is a .folio plan, parsed with every check
// readPlan makes (size, both checksums, the records, validatePlan), then
// loaded into the CPU executor, given a small KV cache and run for one
// step and one verify call (RunPlan.h). A plan must be refused with a
// message at one of these points or run; a crash, a sanitizer report or a
// hang is a finding. The custom mutator changes one field at a time and
// reseals the checksums (PlanMutator.h), so mutations reach validatePlan
// and the kernels instead of stopping at the hash. Built and run by
// run-fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "tools/fuzz/PlanMutator.h"
#include "tools/fuzz/RunPlan.h"

#include "runtime/Plan/PlanIO.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool verbose = std::getenv("FOLIO_FUZZ_VERBOSE") != nullptr;
  folio::Expected<folio::plan::Plan> plan = folio::plan::parsePlan(
      std::string(reinterpret_cast<const char *>(data), size));
  if (!plan) {
    if (plan.status().message().empty()) {
      std::fprintf(stderr, "plan-fuzz: a plan was refused without a message\n");
      std::abort();
    }
    if (verbose)
      std::fprintf(stderr, "refused: %s\n", plan.status().message().c_str());
    return 0;
  }
  folio::Status ran = folio::fuzz::runPlanOnce(
      std::make_shared<const folio::plan::Plan>(std::move(*plan)));
  if (verbose)
    std::fprintf(stderr, "loaded; %s%s\n", ran ? "ran" : "run refused: ",
                 ran ? "" : ran.message().c_str());
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::mt19937_64 rng(seed);
  // A twentieth of the time libFuzzer's own byte mutations, which know
  // nothing of the checksums.
  if (rng() % 20 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::string bytes(reinterpret_cast<const char *>(data), size);
  const char *what = folio::fuzz::mutatePlan(bytes, rng);
  static const bool verbose = std::getenv("FOLIO_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "mutation: %s\n", what);
  if (bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}
