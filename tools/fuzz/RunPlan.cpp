//===- RunPlan.cpp - One step of a plan, as the fuzzers run it ------------===//

#include "tools/fuzz/RunPlan.h"

#include "runtime/Executor/Executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace folio::fuzz {
namespace {

/// A call that succeeded with results its caller cannot use: as much a
/// finding as a crash.
[[noreturn]] void brokenContract(const std::string &what) {
  std::fprintf(stderr, "runPlanOnce: %s\n", what.c_str());
  std::abort();
}

/// The verify entries' vocabulary, or 0 when the plan has none.
int64_t verifyVocab(const plan::Plan &plan) {
  const plan::Entry *entry = plan.findEntry(plan::kVerifyGreedyEntry);
  if (!entry || entry->steps.empty() || entry->steps[0].operands.empty())
    return 0;
  int32_t id = entry->steps[0].operands[0];
  if (id < 0 || size_t(id) >= plan.values.size() ||
      plan.values[size_t(id)].dims.empty())
    return 0;
  return plan.values[size_t(id)].dims.back();
}

/// One greedy and one sampled (one-hot drafts) verification of two drafts
/// for one sequence.
Status runVerify(exec::Executor &executor, int64_t vocab) {
  if (vocab <= 0 || vocab > (int64_t(1) << 20))
    return Status::ok(); // nothing a caller could pass
  const int64_t seqs = 1, draft = 2;
  std::vector<float> logits(size_t(seqs * (draft + 1) * vocab), 0.0f);
  for (int64_t r = 0; r < draft + 1; ++r)
    logits[size_t(r * vocab + r % vocab)] = 1.0f;
  std::vector<int32_t> drafts = {0, int32_t(1 % vocab)};
  std::vector<float> uniforms(size_t(seqs * (draft + 1)), 0.5f);
  exec::VerifyBatch batch;
  batch.numSeqs = seqs;
  batch.numDraft = draft;
  batch.vocab = vocab;
  batch.targetLogits = logits.data();
  batch.draftTokens = drafts.data();
  std::vector<int32_t> accepted, tokens;
  if (Status s = executor.verify(batch, accepted, tokens); !s)
    return s;
  if (accepted.size() != size_t(seqs) ||
      tokens.size() != size_t(seqs * (draft + 1)))
    brokenContract("verify returned arrays of the wrong size");
  batch.sample = true;
  batch.uniforms = uniforms.data();
  return executor.verify(batch, accepted, tokens);
}

} // namespace

Status runPlanOnce(std::shared_ptr<const plan::Plan> plan) {
  exec::ExecutorOptions options;
  options.numThreads = 1;
  std::unique_ptr<exec::Executor> executor = exec::createCPUExecutor(options);
  if (Status s = executor->load(plan); !s)
    return s;
  exec::KVCacheLayout layout = executor->kvCacheLayout();

  // Two sequences, a 3-token prefill and a 1-token one; block 0 is the
  // null block, as in the block pool.
  const int64_t lens[2] = {3, 1};
  int64_t block = layout.blockSize > 0 ? layout.blockSize : 16;
  int64_t maxBlocks = (lens[0] + block - 1) / block;
  int64_t numBlocks = 1 + 2 * maxBlocks;
  if (layout.bytesPerBlock > kMaxKVCacheBytes / numBlocks)
    return Status::resourceExhausted(
        "the plan's KV cache takes " + std::to_string(layout.bytesPerBlock) +
        " bytes per block; the harness allocates at most " +
        std::to_string(kMaxKVCacheBytes) + " bytes");
  if (Status s = executor->allocateKVCache(numBlocks); !s)
    return s;

  int64_t vocab = plan->configValue("vocab", 0);
  int64_t tokenRange = std::clamp<int64_t>(vocab, 1, 1000);
  exec::ForwardBatch batch;
  batch.maxBlocks = maxBlocks;
  batch.queryStartLoc.push_back(0);
  int32_t nextBlock = 1;
  for (int64_t s = 0; s < 2; ++s) {
    std::vector<int32_t> table(size_t(maxBlocks), 0);
    for (int64_t b = 0; b * block < lens[s]; ++b)
      table[size_t(b)] = nextBlock++;
    for (int64_t p = 0; p < lens[s]; ++p) {
      batch.tokens.push_back(
          int32_t((7 * batch.tokens.size() + 3) % size_t(tokenRange)));
      batch.positions.push_back(int32_t(p));
      batch.slotMapping.push_back(int64_t(table[size_t(p / block)]) * block +
                                  p % block);
    }
    batch.blockTables.insert(batch.blockTables.end(), table.begin(),
                             table.end());
    batch.seqLens.push_back(int32_t(lens[s]));
    batch.queryStartLoc.push_back(int32_t(batch.tokens.size()));
    batch.logitsIndices.push_back(int32_t(batch.tokens.size() - 1));
  }
  std::vector<float> logits;
  int64_t logitsVocab = 0;
  if (Status s = executor->forward(batch, logits, logitsVocab); !s)
    return s;
  // An engine reads one row of `logitsVocab` per logits index: a plan that
  // runs must give exactly those.
  if (logitsVocab < 0 ||
      logits.size() != batch.logitsIndices.size() * size_t(logitsVocab))
    brokenContract("forward returned " + std::to_string(logits.size()) +
                   " logits for " + std::to_string(batch.logitsIndices.size()) +
                   " rows of " + std::to_string(logitsVocab));
  return runVerify(*executor, verifyVocab(*plan));
}

} // namespace folio::fuzz
