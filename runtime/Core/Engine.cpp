//===- Engine.cpp - Runs prompts through a plan, step by step -------------===//

#include "runtime/Core/Engine.h"

#include "runtime/Sampler/Sampler.h"

#include <algorithm>
#include <random>

namespace folio::core {

Expected<std::unique_ptr<KVCacheManager>>
Engine::loadWithOwnCache(exec::Executor &executor,
                         std::shared_ptr<const plan::Plan> plan,
                         int64_t numBlocks) {
  if (Status s = executor.load(plan); !s)
    return s;
  exec::KVCacheLayout layout = executor.kvCacheLayout();
  if (layout.numLayers == 0)
    return Status::invalidArgument("the plan has no KV cache inputs");
  if (Status s = executor.allocateKVCache(numBlocks); !s)
    return s;
  KVCacheConfig config;
  config.numBlocks = size_t(numBlocks);
  config.blockSize = size_t(layout.blockSize);
  config.enablePrefixCaching = false;
  if (Status s = config.validate(); !s)
    return s;
  return std::make_unique<KVCacheManager>(config);
}

Expected<std::unique_ptr<Engine>>
Engine::create(std::shared_ptr<const plan::Plan> plan,
               std::unique_ptr<exec::Executor> executor, int64_t numBlocks) {
  Expected<std::unique_ptr<KVCacheManager>> kv =
      loadWithOwnCache(*executor, plan, numBlocks);
  if (!kv)
    return kv.status();
  auto engine = std::unique_ptr<Engine>(new Engine());
  engine->plan_ = plan;
  engine->blockSize_ = executor->kvCacheLayout().blockSize;
  engine->executor_ = std::move(executor);
  engine->vocab_ = plan->configValue("vocab", 0);
  engine->maxPositions_ = plan->configValue("max_positions", 0);
  engine->kv_ = std::move(*kv);
  return engine;
}

int64_t Engine::blocksFor(const std::vector<std::vector<TokenId>> &prompts,
                          int64_t maxNewTokens, int64_t blockSize) {
  int64_t blocks = 1;
  for (const auto &p : prompts)
    blocks += (int64_t(p.size()) + maxNewTokens + blockSize - 1) / blockSize;
  return blocks;
}

Status Engine::step(std::vector<SequenceState *> &seqs,
                    const std::vector<int64_t> &numScheduled,
                    std::vector<float> &logits) {
  std::vector<ScheduledSequence> scheduled;
  for (size_t i = 0; i < seqs.size(); ++i) {
    SequenceState &s = *seqs[i];
    if (!kv_->allocateSlots(s.id, size_t(s.numComputed),
                            size_t(numScheduled[i])))
      return Status::resourceExhausted("out of KV cache blocks for sequence '" +
                                       s.id + "'");
    ScheduledSequence ss;
    ss.tokens = &s.tokens;
    ss.numComputed = s.numComputed;
    ss.numScheduled = numScheduled[i];
    ss.blockTable = &kv_->blockIds(s.id);
    scheduled.push_back(ss);
  }
  Expected<exec::ForwardBatch> batch = buildForwardBatch(scheduled, blockSize_);
  if (!batch)
    return batch.status();
  int64_t vocab = 0;
  if (Status s = executor_->forward(*batch, logits, vocab); !s)
    return s;
  vocab_ = vocab;
  for (size_t i = 0; i < seqs.size(); ++i)
    seqs[i]->numComputed += numScheduled[i];
  return Status::ok();
}

Status Engine::checkMaxModelLen(const plan::Plan &plan, int64_t maxModelLen) {
  int64_t maxContext = plan.configValue("max_context", 0);
  if (maxContext > 0 && maxModelLen > maxContext)
    return Status::invalidArgument(
        "max-model-len " + std::to_string(maxModelLen) + " exceeds the " +
        std::to_string(maxContext) +
        " tokens the model's attention masks were proven causal up to");
  int64_t maxPositions = plan.configValue("max_positions", 0);
  if (maxPositions > 0 && maxModelLen > maxPositions)
    return Status::invalidArgument(
        "max-model-len " + std::to_string(maxModelLen) +
        " exceeds the model's " + std::to_string(maxPositions) +
        " positions (its position table's rows, the plan's max_positions)");
  return Status::ok();
}

Status Engine::checkGenerate(const plan::Plan &plan, int64_t vocab,
                             const std::vector<std::vector<TokenId>> &prompts,
                             const GenerateOptions &options) {
  if (prompts.empty())
    return Status::invalidArgument("no prompts");
  if (options.maxNewTokens < 1)
    return Status::invalidArgument("max new tokens must be at least 1");
  if (Status s = options.sampling.validate(size_t(vocab)); !s)
    return s;
  if (Status s = checkMaxModelLen(plan, options.maxModelLen); !s)
    return s;
  // The compiler proved the attention masks causal (as raised) only up to
  // max_context tokens; past that the model's mask is unknown, so nothing
  // longer is served, however short max-model-len was left.
  int64_t maxContext = plan.configValue("max_context", 0);
  std::string proven = "the " + std::to_string(maxContext) +
                       " tokens the model's attention masks were proven "
                       "causal up to";
  int64_t maxPositions = plan.configValue("max_positions", 0);
  int64_t maxLen = options.maxModelLen ? options.maxModelLen : maxPositions;
  std::string limit = "the model's " + std::to_string(maxLen) + " positions";
  if (maxContext > 0 && (maxLen == 0 || maxContext < maxLen)) {
    maxLen = maxContext;
    limit = proven;
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto &p = prompts[i];
    std::string which = "prompt " + std::to_string(i + 1);
    if (p.empty())
      return Status::invalidArgument(which + " is empty");
    for (TokenId t : p)
      if (t < 0 || (vocab > 0 && t >= vocab))
        return Status::invalidArgument(
            which + ": token id " + std::to_string(t) +
            " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    if (maxLen > 0 && int64_t(p.size()) > maxLen)
      return Status::invalidArgument(which + " has " +
                                     std::to_string(p.size()) +
                                     " tokens, more than " + limit);
    // The last new token is never fed back, so the context reaches
    // prompt + maxNewTokens - 1 positions.
    if (maxLen > 0 && int64_t(p.size()) + options.maxNewTokens - 1 > maxLen)
      return Status::invalidArgument(which + " (" + std::to_string(p.size()) +
                                     " tokens) plus " +
                                     std::to_string(options.maxNewTokens) +
                                     " new tokens exceeds " + limit);
  }
  return Status::ok();
}

Expected<GenerateResult>
Engine::generate(const std::vector<std::vector<TokenId>> &prompts,
                 const GenerateOptions &options) {
  if (Status s = checkGenerate(*plan_, vocab_, prompts, options); !s)
    return s;
  const SamplingParams &sp = options.sampling;
  std::vector<uint64_t> seeds(prompts.size(), sp.seed.value_or(0));
  if (!sp.seed) {
    std::random_device rd;
    for (uint64_t &seed : seeds)
      seed = (uint64_t(rd()) << 32) ^ rd();
  }
  std::vector<SequenceState> states(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    states[i].id = "seq" + std::to_string(i);
    states[i].tokens = prompts[i];
  }
  GenerateResult result;
  result.tokens.resize(prompts.size());
  std::vector<SequenceState *> seqs;
  std::vector<int64_t> counts;
  for (SequenceState &s : states) {
    seqs.push_back(&s);
    counts.push_back(int64_t(s.tokens.size()));
  }
  std::vector<float> logits;
  std::vector<float> kept;
  for (int64_t stepIdx = 0; stepIdx < options.maxNewTokens; ++stepIdx) {
    if (Status s = step(seqs, counts, logits); !s) {
      for (SequenceState &st : states)
        release(st);
      return s;
    }
    if (options.keepLogits && stepIdx == 0)
      kept.assign(size_t(prompts.size() * options.maxNewTokens * vocab_), 0.f);
    for (size_t i = 0; i < seqs.size(); ++i) {
      const float *row = logits.data() + i * size_t(vocab_);
      // Refuse a row holding NaN or +inf, or only -inf (the same guard as
      // the serving engine's, see checkLogitsRow): the model broke for
      // this sequence, and any token would be arbitrary. generate()
      // returns one batch result, so the failure names the prompt and
      // fails the call; the serving engine fails only that request.
      LogitsCheck check = checkLogitsRow(row, size_t(vocab_));
      if (!check.ok()) {
        for (SequenceState &st : states)
          release(st);
        std::string at = " at new token " + std::to_string(stepIdx);
        std::string which = "prompt " + std::to_string(i + 1) + ": ";
        if (check.fault == LogitsFault::AllNegInf)
          return Status::internal(which +
                                  "every logit the model produced "
                                  "is -inf" +
                                  at);
        return Status::internal(
            which + "the model produced a " + logitsFaultName(check.fault) +
            " logit (token " + std::to_string(check.index) + ")" + at);
      }
      // The argmax, first maximum as the references take it.
      TokenId best = firstMaximum(row, size_t(vocab_));
      if (!sp.isGreedy()) {
        // Keyed by the sampled token's position: a prompt's draws do not
        // depend on the batch around it.
        SampleRow sr;
        sr.params = &sp;
        sr.seed = seeds[i];
        sr.position = uint64_t(seqs[i]->tokens.size());
        Expected<SampledToken> t = sampleRow(row, size_t(vocab_), sr);
        if (!t) {
          for (SequenceState &st : states)
            release(st);
          return t.status();
        }
        best = t->token;
      }
      result.tokens[i].push_back(best);
      seqs[i]->tokens.push_back(best);
      counts[i] = 1;
      if (options.keepLogits)
        std::copy(row, row + vocab_,
                  kept.begin() + long((i * size_t(options.maxNewTokens) +
                                       size_t(stepIdx)) *
                                      size_t(vocab_)));
    }
  }
  for (SequenceState &st : states)
    release(st);
  result.logits = std::move(kept);
  result.vocab = vocab_;
  return result;
}

} // namespace folio::core
