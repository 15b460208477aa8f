//===- SchedulerConfig.cpp - Scheduler limits and policies ----------------===//

#include "runtime/Scheduler/SchedulerConfig.h"

#include <string>

using namespace folio;

Status SchedulerConfig::validate(const KVCacheConfig &kvCache) const {
  if (Status status = kvCache.validate(); !status)
    return status;
  if (maxNumBatchedTokens == 0)
    return Status::invalidArgument("max-num-batched-tokens must be positive");
  if (maxNumSeqs == 0)
    return Status::invalidArgument("max-num-seqs must be positive");
  if (maxModelLen < 2)
    return Status::invalidArgument(
        "max-model-len must be at least 2 (a prompt token and an output)");
  if (!enableChunkedPrefill && maxNumBatchedTokens < maxModelLen)
    return Status::invalidArgument(
        "without chunked prefill, max-num-batched-tokens (" +
        std::to_string(maxNumBatchedTokens) +
        ") must be at least max-model-len (" + std::to_string(maxModelLen) +
        ") or long prompts could never be scheduled");
  size_t blocksNeeded =
      (maxModelLen + kvCache.blockSize - 1) / kvCache.blockSize;
  if (blocksNeeded > kvCache.numBlocks - 1)
    return Status::invalidArgument(
        "max-model-len " + std::to_string(maxModelLen) + " needs " +
        std::to_string(blocksNeeded) + " KV blocks but the cache has " +
        std::to_string(kvCache.numBlocks - 1) +
        "; lower max-model-len or give the KV cache more memory");
  if (eosTokenId &&
      (*eosTokenId < 0 ||
       (vocabSize && static_cast<size_t>(*eosTokenId) >= vocabSize)))
    return Status::invalidArgument("EOS token id " +
                                   std::to_string(*eosTokenId) +
                                   " is outside the vocabulary");
  return Status::ok();
}
