//===- PlanMutator.h - Field-level mutations of .folio plans ----*- C++ -*-===//
//
// The structure-aware half of the plan fuzzer. A serialised plan is walked
// record by record with the layout runtime/Plan/PlanIO.cpp writes, so that
// a mutation changes one field (an id, a dim, an enum byte, an offset, a
// float attribute, a string), one list (an operand more or less), one
// record (a step, a value, a constant duplicated or dropped) or one
// constant's bytes in the blob, and then the file size, header length,
// blob offset and both XXH64 checksums are recomputed: the mutation gets
// past the hash and reaches validatePlan and the executor. A few mutations
// stay raw (bytes changed with or without resealing), so the checksum and
// framing checks keep their coverage.
//
// The walker mirrors the writer; when the layout changes (kPlanVersion),
// it must change with it, or every input falls back to raw mutations
// (PlanFuzz.LayoutWalkerCoversCompiledPlans catches that).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FUZZ_PLANMUTATOR_H
#define FOLIO_TOOLS_FUZZ_PLANMUTATOR_H

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace folio::fuzz {

/// How many fields the walker finds in `bytes`, or -1 when they do not
/// follow the plan layout (for tests).
int64_t countPlanFields(const std::string &bytes);

/// Recomputes the fixed header's sizes and both checksums of a plan whose
/// header records or blob were changed in place.
void resealPlan(std::string &bytes);

/// Applies one random mutation to the plan in `bytes` and returns its name
/// (for FOLIO_FUZZ_VERBOSE). Bytes that do not walk as a plan get raw
/// mutations only.
const char *mutatePlan(std::string &bytes, std::mt19937_64 &rng);

} // namespace folio::fuzz

#endif // FOLIO_TOOLS_FUZZ_PLANMUTATOR_H
