//===- SpecDecodeTest.cpp - Speculative decoding in the serving engine ----===//
//
// The bundled target with its bundled draft (real trained weights, so
// drafts are often kept) and with n-gram lookup: greedy output must be
// token for token what the target gives alone, under any batch mix,
// chunked prefill, prefix caching, preemption and abort; sampled output
// must be distributed as the target's own (a chi-square test); the draft's
// cache must roll back by length to exactly what recomputing would hold.
//
//===----------------------------------------------------------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"
#include "runtime/Core/ServingEngine.h"
#include "runtime/Core/SpeculativeStep.h"
#include "runtime/Sampler/LogitsProcessors.h"
#include "runtime/Sampler/Sampler.h"
#include "runtime/SpecDecode/DraftProposer.h"
#include "runtime/SpecDecode/NgramProposer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

using namespace folio;

namespace {

const std::string kBundled = std::string(FOLIO_SOURCE_DIR) + "/models/bundled/";
constexpr int64_t kTargetBlock = 8, kDraftBlock = 4;
constexpr size_t kMaxModelLen = 256;

std::shared_ptr<const plan::Plan> compile(const std::string &file,
                                          int64_t blockSize) {
  mlir::folio::CompileToPlanOptions options;
  options.blockSize = blockSize;
  auto p = mlir::folio::compileONNXToPlan(kBundled + file, options);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return nullptr;
  }
  return std::make_shared<const plan::Plan>(std::move(*p));
}

std::shared_ptr<const plan::Plan> target() {
  static auto p = compile("target.onnx", kTargetBlock);
  return p;
}
std::shared_ptr<const plan::Plan> draft() {
  static auto p = compile("draft.onnx", kDraftBlock);
  return p;
}

/// Held-out text: window w's tokens [from, from + n).
std::vector<TokenId> heldout(int w, int from, int n) {
  static std::vector<int32_t> ids = [] {
    std::ifstream in(kBundled + "heldout_slice.i32", std::ios::binary);
    std::vector<int32_t> v(16 * 256);
    in.read(reinterpret_cast<char *>(v.data()),
            std::streamsize(v.size() * sizeof(int32_t)));
    EXPECT_EQ(in.gcount(), std::streamsize(v.size() * sizeof(int32_t)));
    return v;
  }();
  return std::vector<TokenId>(ids.begin() + w * 256 + from,
                              ids.begin() + w * 256 + from + n);
}

/// Prompts of many lengths; some repeat themselves (n-gram food).
std::vector<std::vector<TokenId>> prompts() {
  std::vector<std::vector<TokenId>> out;
  for (int w = 0; w < 10; ++w)
    out.push_back(heldout(w, 3 * w, 1 + 7 * w));
  std::vector<TokenId> twice = heldout(11, 0, 40);
  std::vector<TokenId> head = heldout(11, 0, 25);
  twice.insert(twice.end(), head.begin(), head.end());
  out.push_back(twice);
  return out;
}

/// The CPU executor as a GPU's looks to the model runner when it takes
/// greedy tokens on the device (Executor::forwardGreedy): the argmax of each
/// logits row (firstMaximum), -1 for a row the device's sampler refuses.
/// Counts what the runner asked of it.
class ArgmaxOnDevice final : public exec::Executor {
public:
  ArgmaxOnDevice() : inner(exec::createCPUExecutor()) {}
  const char *deviceName() const override { return "argmax-on-device"; }
  Status load(std::shared_ptr<const plan::Plan> plan) override {
    return inner->load(std::move(plan));
  }
  exec::KVCacheLayout kvCacheLayout() const override {
    return inner->kvCacheLayout();
  }
  Status allocateKVCache(int64_t numBlocks) override {
    return inner->allocateKVCache(numBlocks);
  }
  Status forward(const exec::ForwardBatch &b, std::vector<float> &logits,
                 int64_t &vocab) override {
    ++forwardCalls;
    return inner->forward(b, logits, vocab);
  }
  bool greedyOnDevice() const override { return true; }
  Status forwardGreedy(const exec::ForwardBatch &b, std::vector<int32_t> &ids,
                       int64_t &vocab) override {
    ++greedyCalls;
    std::vector<float> logits;
    if (Status s = inner->forward(b, logits, vocab); !s)
      return s;
    size_t seqs = b.queryStartLoc.size() - 1;
    if (b.logitsIndices.size() > seqs)
      ++verifyingSteps; // some sequence brought k + 1 rows
    ids.clear();
    for (size_t r = 0; r < b.logitsIndices.size(); ++r) {
      const float *row = logits.data() + r * size_t(vocab);
      ids.push_back(checkLogitsRow(row, size_t(vocab)).ok()
                        ? firstMaximum(row, size_t(vocab))
                        : -1);
    }
    return Status::ok();
  }
  Status verify(const exec::VerifyBatch &batch, std::vector<int32_t> &accepted,
                std::vector<int32_t> &tokens) override {
    ++verifyCalls;
    return inner->verify(batch, accepted, tokens);
  }
  int forwardCalls = 0, greedyCalls = 0, verifyCalls = 0, verifyingSteps = 0;

private:
  std::unique_ptr<exec::Executor> inner;
};

struct SpecSetup {
  std::string method; ///< "", "draft" or "ngram"
  size_t k = 4;
  bool adaptive = false;
  size_t numBlocks = 512;
  size_t maxNumSeqs = 256;
  size_t maxNumBatchedTokens = 2048;
  bool prefixCaching = false;
  size_t draftBlocks = 1024;
  /// The target's and the draft's executors: the CPU's, or these, kept by
  /// the engine.
  ArgmaxOnDevice *argmaxOnDevice = nullptr, *draftOnDevice = nullptr;
};

std::unique_ptr<core::ServingEngine>
makeEngine(const SpecSetup &s, spec::DraftProposer **out = nullptr) {
  SchedulerConfig config;
  config.maxNumBatchedTokens = s.maxNumBatchedTokens;
  config.maxNumSeqs = s.maxNumSeqs;
  config.maxModelLen = kMaxModelLen;
  config.vocabSize = 4096;
  KVCacheConfig kv;
  kv.numBlocks = s.numBlocks;
  kv.blockSize = kTargetBlock;
  kv.enablePrefixCaching = s.prefixCaching;
  core::SpeculativeConfig spec;
  if (s.method == "draft") {
    auto d = spec::DraftProposer::create(
        draft(),
        s.draftOnDevice ? std::unique_ptr<exec::Executor>(s.draftOnDevice)
                        : exec::createCPUExecutor(),
        int64_t(s.draftBlocks), 4096, int64_t(kMaxModelLen));
    EXPECT_TRUE(d) << d.status().message();
    if (!d)
      return nullptr;
    if (out)
      *out = d->get();
    spec.proposer = std::move(*d);
  } else if (s.method == "ngram") {
    auto n = spec::NgramProposer::create(1, 4);
    EXPECT_TRUE(n);
    spec.proposer = std::move(*n);
  }
  if (spec.proposer) {
    spec.numSpeculativeTokens = s.k;
    spec.adaptive = s.adaptive;
  }
  std::unique_ptr<exec::Executor> executor =
      s.argmaxOnDevice ? std::unique_ptr<exec::Executor>(s.argmaxOnDevice)
                       : exec::createCPUExecutor();
  auto engine = core::ServingEngine::create(target(), std::move(executor),
                                            config, kv, std::move(spec));
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(*engine) : nullptr;
}

NewRequest request(const std::string &id, const std::vector<TokenId> &prompt,
                   size_t maxTokens, float temperature = 0.0f) {
  NewRequest r;
  r.requestId = id;
  r.promptTokenIds = prompt;
  r.samplingParams.temperature = temperature;
  r.samplingParams.maxTokens = maxTokens;
  r.samplingParams.ignoreEos = true;
  return r;
}

using Outputs = std::map<std::string, std::vector<TokenId>>;

/// Steps to completion, checking the scheduler's invariants every step.
Outputs serve(core::ServingEngine &engine,
              const std::vector<NewRequest> &requests) {
  for (const NewRequest &r : requests)
    EXPECT_TRUE(engine.addRequest(r)) << r.requestId;
  Outputs out;
  while (engine.hasUnfinishedRequests()) {
    auto step = engine.step();
    if (!step) {
      ADD_FAILURE() << step.status().message();
      break;
    }
    Status inv = engine.getScheduler().checkInvariants();
    EXPECT_TRUE(inv) << inv.message();
    if (!inv)
      break;
    for (const RequestOutput &o : *step) {
      EXPECT_TRUE(o.error.empty()) << o.error;
      auto &t = out[o.requestId];
      t.insert(t.end(), o.newTokenIds.begin(), o.newTokenIds.end());
    }
  }
  return out;
}

std::vector<NewRequest> greedyRequests(size_t maxTokens = 32) {
  std::vector<NewRequest> rs;
  auto ps = prompts();
  for (size_t i = 0; i < ps.size(); ++i)
    rs.push_back(request("r" + std::to_string(i), ps[i], maxTokens));
  return rs;
}

const Outputs &greedyReference() {
  static Outputs ref = [] {
    auto engine = makeEngine(SpecSetup());
    return serve(*engine, greedyRequests());
  }();
  return ref;
}

void expectSame(const Outputs &got, const Outputs &want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto &[id, tokens] : want) {
    auto it = got.find(id);
    ASSERT_NE(it, got.end()) << id;
    EXPECT_EQ(it->second, tokens) << "request " << id;
  }
}

TEST(SpecDecode, GreedyDraftMatchesTheTargetAlone) {
  for (size_t maxSeqs : {size_t(1), size_t(3), size_t(256)}) {
    SpecSetup s;
    s.method = "draft";
    s.maxNumSeqs = maxSeqs;
    auto engine = makeEngine(s);
    ASSERT_TRUE(engine);
    expectSame(serve(*engine, greedyRequests()), greedyReference());
    const core::SpeculativeStats &st = engine->speculativeStats();
    EXPECT_GT(st.numProposed, 0u) << "max-num-seqs " << maxSeqs;
    EXPECT_GT(st.numAccepted, 0u) << "the trained draft keeps some drafts";
  }
}

TEST(SpecDecode, GreedyNgramMatchesTheTargetAlone) {
  for (size_t k : {size_t(1), size_t(3), size_t(6)}) {
    SpecSetup s;
    s.method = "ngram";
    s.k = k;
    auto engine = makeEngine(s);
    ASSERT_TRUE(engine);
    expectSame(serve(*engine, greedyRequests()), greedyReference());
    EXPECT_GT(engine->speculativeStats().numProposed, 0u);
  }
}

TEST(SpecDecode, GreedyVerifiesFromArgmaxTakenOnTheDevice) {
  // Executors that take greedy tokens where their logits are (a GPU):
  // the target verifies greedy drafts from each row's argmax (no logits
  // rows come back, the verify entry does not run), and the draft model
  // drafts from its rows' argmax; the output is still the target's alone.
  for (const char *method : {"draft", "ngram"}) {
    SpecSetup s;
    s.method = method;
    s.argmaxOnDevice = new ArgmaxOnDevice;
    ArgmaxOnDevice *gpu = s.argmaxOnDevice, *draftGpu = nullptr;
    if (s.method == "draft")
      draftGpu = s.draftOnDevice = new ArgmaxOnDevice;
    auto engine = makeEngine(s);
    ASSERT_TRUE(engine);
    expectSame(serve(*engine, greedyRequests()), greedyReference());
    EXPECT_GT(gpu->verifyingSteps, 0) << method;
    EXPECT_EQ(gpu->verifyCalls, 0) << method;
    EXPECT_EQ(gpu->forwardCalls, 0) << method;
    EXPECT_GT(engine->speculativeStats().numAccepted, 0u) << method;
    if (draftGpu) {
      EXPECT_GT(draftGpu->greedyCalls, 0);
      EXPECT_EQ(draftGpu->forwardCalls, 0);
    }
    // The same drafts as on the CPU: as many proposed and kept.
    SpecSetup cpu;
    cpu.method = method;
    auto reference = makeEngine(cpu);
    ASSERT_TRUE(reference);
    serve(*reference, greedyRequests());
    EXPECT_EQ(engine->speculativeStats().numProposed,
              reference->speculativeStats().numProposed)
        << method;
    EXPECT_EQ(engine->speculativeStats().numAccepted,
              reference->speculativeStats().numAccepted)
        << method;
  }
  // A sampled request beside them brings the rows back to the host, the
  // target's and the draft's.
  SpecSetup s;
  s.method = "draft";
  s.argmaxOnDevice = new ArgmaxOnDevice;
  s.draftOnDevice = new ArgmaxOnDevice;
  ArgmaxOnDevice *gpu = s.argmaxOnDevice, *draftGpu = s.draftOnDevice;
  auto engine = makeEngine(s);
  ASSERT_TRUE(engine);
  std::vector<NewRequest> rs = greedyRequests(8);
  rs.push_back(request("sampled", heldout(12, 0, 30), 8, 0.7f));
  serve(*engine, rs);
  EXPECT_GT(gpu->forwardCalls, 0);
  EXPECT_GT(gpu->verifyCalls, 0);
  EXPECT_GT(draftGpu->forwardCalls, 0);
}

TEST(SpecDecode, GreedyTokensVerifyAsTheVerifyEntry) {
  // verifyGreedyTokens against the plan's verify entry (greedy) on random
  // rows with ties and drafts taken from the argmax at random lengths;
  // then rows the device refused.
  auto cpu = exec::createCPUExecutor();
  ASSERT_TRUE(cpu->load(target()));
  const int64_t vocab = 4096, maxDrafts = 5;
  std::mt19937 rng(3);
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<TokenId> none;
  for (int trial = 0; trial < 20; ++trial) {
    const size_t numSeqs = 1 + size_t(rng() % 4);
    std::vector<float> logits(numSeqs * (maxDrafts + 1) * vocab);
    for (float &x : logits)
      x = float(rng() % 64); // many ties: the first maximum must win
    std::vector<int32_t> argmax;
    for (size_t r = 0; r < numSeqs * (maxDrafts + 1); ++r)
      argmax.push_back(firstMaximum(logits.data() + r * vocab, vocab));
    std::vector<std::vector<TokenId>> drafts(numSeqs);
    std::vector<core::SpecSequence> seqs(numSeqs);
    for (size_t i = 0; i < numSeqs; ++i) {
      size_t k = 1 + rng() % maxDrafts, keep = rng() % (k + 1);
      for (size_t j = 0; j < k; ++j)
        drafts[i].push_back(j < keep ? argmax[i * (maxDrafts + 1) + j]
                                     : TokenId(rng() % vocab));
      seqs[i].prompt = seqs[i].output = &none;
      seqs[i].drafts = &drafts[i];
      seqs[i].params = &greedy;
    }
    std::vector<core::SpecOutcome> want, got;
    ASSERT_TRUE(core::verifySpeculative(*cpu, logits.data(), maxDrafts, vocab,
                                        seqs, want));
    core::verifyGreedyTokens(argmax.data(), maxDrafts, vocab, seqs, got);
    ASSERT_EQ(got.size(), numSeqs);
    for (size_t i = 0; i < numSeqs; ++i) {
      EXPECT_EQ(got[i].tokens, want[i].tokens) << "trial " << trial;
      EXPECT_EQ(got[i].numAccepted, want[i].numAccepted);
      EXPECT_TRUE(got[i].error.empty());
    }
  }
  // Drafts 7, 8 against argmax 7, 9 (the second rejected), then a refused
  // row past the rejection: the sequence fails alone, naming the row; a
  // refused padding row (past its k) is not read.
  std::vector<TokenId> d1 = {7, 8}, d2 = {7};
  core::SpecSequence a, b;
  a.prompt = a.output = b.prompt = b.output = &none;
  a.params = b.params = &greedy;
  a.drafts = &d1;
  b.drafts = &d2;
  std::vector<int32_t> rows = {7, 9, -1, 7, 4, int32_t(vocab)};
  std::vector<core::SpecOutcome> out;
  core::verifyGreedyTokens(rows.data(), 2, vocab, {a, b}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].tokens.empty());
  EXPECT_NE(out[0].error.find("at draft position 2"), std::string::npos)
      << out[0].error;
  EXPECT_TRUE(out[1].error.empty()) << out[1].error;
  EXPECT_EQ(out[1].tokens, (std::vector<TokenId>{7, 4}));
  EXPECT_EQ(out[1].numAccepted, 1u);
}

// A sampled sequence whose draft distributions a draft model kept on a
// device: a device verifier that reads them takes it, one that does not
// leaves it to the host, and the host refuses it until they are copied
// over (read as one-hot, its drafts would be kept too often).
TEST(SpecDecode, DraftDistributionsKeptOnADeviceAreNotReadAsOneHot) {
  const int64_t vocab = 8, maxDrafts = 2;
  SamplingParams sampled;
  sampled.temperature = 1.0f;
  std::vector<TokenId> none, drafts = {3, 5};
  core::SpecSequence seq;
  seq.prompt = seq.output = &none;
  seq.drafts = &drafts;
  seq.params = &sampled;
  seq.draftProbsRow = 4;
  EXPECT_TRUE(core::draftProbsOnlyOnDevice(seq));
  EXPECT_TRUE(core::verifiableOnDevice(seq, true, true, /*deviceProbs=*/true));
  EXPECT_FALSE(core::verifiableOnDevice(seq, true, true, false));
  auto cpu = exec::createCPUExecutor();
  std::vector<float> logits(size_t((maxDrafts + 1) * vocab), 0.0f);
  std::vector<core::SpecOutcome> out;
  Status s = core::verifySpeculative(*cpu, logits.data(), maxDrafts, vocab,
                                     {seq}, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("without a copy"), std::string::npos)
      << s.message();
  // Copied over, the host verifies it and the device's verifier reads the
  // copy no more than it reads any host distribution.
  std::vector<float> copy(size_t(maxDrafts * vocab), 1.0f / float(vocab));
  seq.draftProbs = &copy;
  EXPECT_FALSE(core::draftProbsOnlyOnDevice(seq));
  EXPECT_FALSE(core::verifiableOnDevice(seq, true, true, true));
  // Greedy sequences and one-hot drafts read no distribution.
  seq.draftProbs = nullptr;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  seq.params = &greedy;
  EXPECT_FALSE(core::draftProbsOnlyOnDevice(seq));
  EXPECT_TRUE(core::verifiableOnDevice(seq, true, true, false));
  seq.params = &sampled;
  seq.draftProbsRow = -1;
  EXPECT_TRUE(core::verifiableOnDevice(seq, true, true, false));
}

// A device's verifier penalizes row j with the output and drafts 0..j-1
// as history, as verifySpeculative does: one list per row, past the drafts
// every draft.
TEST(SpecDecode, VerifiedRowsPenaltyListsHoldTheDraftsBeforeThem) {
  SamplingParams params;
  params.presencePenalty = 0.4f;
  std::vector<TokenId> prompt = {5}, output = {3, 3}, drafts = {3, 8};
  core::SpecSequence seq;
  seq.prompt = &prompt;
  seq.output = &output;
  seq.drafts = &drafts;
  seq.params = &params;
  std::vector<int32_t> tokens[4], counts[4];
  core::verifyPenaltyLists(seq, 3, tokens, counts);
  EXPECT_EQ(tokens[0], (std::vector<int32_t>{3}));
  EXPECT_EQ(counts[0], (std::vector<int32_t>{2}));
  EXPECT_EQ(tokens[1], (std::vector<int32_t>{3}));
  EXPECT_EQ(counts[1], (std::vector<int32_t>{3}));
  for (int j : {2, 3}) {
    EXPECT_EQ(tokens[j], (std::vector<int32_t>{3, 8})) << j;
    EXPECT_EQ(counts[j], (std::vector<int32_t>{3, 1})) << j;
  }
  // With the repetition penalty the prompt's tokens are listed at 0 until
  // a draft repeats one; each row's list is what penaltyList gives for
  // its history.
  params.repetitionPenalty = 1.2f;
  drafts = {5, 1, 5};
  core::verifyPenaltyLists(seq, 3, tokens, counts);
  EXPECT_EQ(tokens[0], (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(counts[0], (std::vector<int32_t>{2, 0}));
  for (size_t j = 0; j <= 3; ++j) {
    std::vector<int32_t> t, c;
    std::vector<TokenId> history = output; // then drafts 0..j-1
    history.insert(history.end(), drafts.begin(), drafts.begin() + long(j));
    penaltyList(params, prompt, history, t, c);
    EXPECT_EQ(tokens[j], t) << j;
    EXPECT_EQ(counts[j], c) << j;
  }
  EXPECT_EQ(counts[3], (std::vector<int32_t>{1, 2, 2}));
}

TEST(SpecDecode, PenaltiesAndLogprobsMatchTheTargetAlone) {
  // Penalties see the drafts before each verified row as history, and
  // logprobs come from the same processed rows: both as without drafts.
  auto requests = [] {
    std::vector<NewRequest> rs = greedyRequests(20);
    for (size_t i = 0; i < rs.size(); ++i) {
      rs[i].samplingParams.repetitionPenalty = 1.3f;
      rs[i].samplingParams.presencePenalty = i % 2 ? 0.5f : 0.0f;
      rs[i].samplingParams.frequencyPenalty = i % 3 ? 0.0f : 0.25f;
      rs[i].samplingParams.logprobs = 3;
    }
    return rs;
  };
  auto run = [&](const std::string &method) {
    SpecSetup s;
    s.method = method;
    auto engine = makeEngine(s);
    std::map<std::string, std::vector<TokenLogprobs>> logprobs;
    Outputs out;
    for (const NewRequest &r : requests())
      EXPECT_TRUE(engine->addRequest(r));
    EXPECT_TRUE(engine->runToCompletion([&](const RequestOutput &o) {
      auto &t = out[o.requestId];
      t.insert(t.end(), o.newTokenIds.begin(), o.newTokenIds.end());
      auto &l = logprobs[o.requestId];
      l.insert(l.end(), o.newLogprobs.begin(), o.newLogprobs.end());
    }));
    return std::make_pair(out, logprobs);
  };
  auto plain = run("");
  for (const char *method : {"ngram", "draft"}) {
    auto spec = run(method);
    expectSame(spec.first, plain.first);
    for (const auto &[id, want] : plain.second) {
      const std::vector<TokenLogprobs> &got = spec.second[id];
      ASSERT_EQ(got.size(), want.size()) << method << " " << id;
      for (size_t i = 0; i < got.size(); ++i) {
        // Verification reads k + 1 rows per sequence, so its linears may
        // take the batched GEMM (activations rounded to bf16) where the
        // plain decode took the GEMV: logprobs agree to a few 1e-3.
        EXPECT_NEAR(got[i].logprob, want[i].logprob, 5e-3) << id << " " << i;
        ASSERT_EQ(got[i].top.size(), 3u);
        EXPECT_EQ(got[i].top[0].first, want[i].top[0].first) << id << " " << i;
      }
    }
  }
}

TEST(SpecDecode, AdaptiveSpeculationMatchesTheTargetAlone) {
  SpecSetup s;
  s.method = "draft";
  s.adaptive = true;
  auto engine = makeEngine(s);
  ASSERT_TRUE(engine);
  expectSame(serve(*engine, greedyRequests()), greedyReference());
}

/// The bundled draft, reporting every third proposal as unsteady (a catch
/// up), and counting its calls.
class ScriptedSteadiness final : public spec::Proposer {
public:
  explicit ScriptedSteadiness(std::unique_ptr<spec::DraftProposer> d)
      : inner(std::move(d)) {}
  const char *method() const override { return inner->method(); }
  Status propose(const std::vector<spec::ProposeInput> &inputs, size_t k,
                 std::vector<spec::Proposal> &out) override {
    ++calls;
    return inner->propose(inputs, k, out);
  }
  void release(const RequestId &id) override { inner->release(id); }
  bool lastProposalSteady() const override { return calls % 3 != 0; }
  size_t calls = 0;

private:
  std::unique_ptr<spec::DraftProposer> inner;
};

// Tests that the adaptive controller learns only from decode-only steps
// whose drafts were proposed steadily (or that proposed none): a step after
// a draft's catch-up is not timed, nor is a prefill step. One request, so
// every step after its prefill decodes.
TEST(SpecDecode, AdaptiveTimesOnlyStepsAfterSteadyProposals) {
  SchedulerConfig config;
  config.maxNumBatchedTokens = 2048;
  config.maxNumSeqs = 4;
  config.maxModelLen = kMaxModelLen;
  config.vocabSize = 4096;
  KVCacheConfig kv;
  kv.numBlocks = 128;
  kv.blockSize = kTargetBlock;
  auto d = spec::DraftProposer::create(draft(), exec::createCPUExecutor(), 256,
                                       4096, int64_t(kMaxModelLen));
  ASSERT_TRUE(d) << d.status().message();
  auto scripted = std::make_unique<ScriptedSteadiness>(std::move(*d));
  ScriptedSteadiness *proposer = scripted.get();
  core::SpeculativeConfig spec;
  spec.proposer = std::move(scripted);
  spec.numSpeculativeTokens = 4;
  spec.adaptive = true;
  auto engine = core::ServingEngine::create(target(), exec::createCPUExecutor(),
                                            config, kv, std::move(spec));
  ASSERT_TRUE(engine) << engine.status().message();
  ASSERT_TRUE((*engine)->addRequest(request("a", heldout(2, 0, 30), 200)));
  uint64_t want = 0;
  size_t steps = 0, callsBefore = 0;
  bool proposedBefore = false, steadyBefore = true;
  while ((*engine)->hasUnfinishedRequests()) {
    auto out = (*engine)->step();
    ASSERT_TRUE(out) << out.status().message();
    // Every step after the first (the prefill) decodes only; it is timed
    // if the proposing before it was steady or did not happen (k = 0).
    if (steps++ > 0)
      want += !proposedBefore || steadyBefore;
    proposedBefore = proposer->calls > callsBefore;
    steadyBefore = proposer->lastProposalSteady();
    callsBefore = proposer->calls;
  }
  const core::SpeculativeStats &st = (*engine)->speculativeStats();
  EXPECT_GE(proposer->calls, 6u);
  EXPECT_EQ(st.numTimedSteps, want);
  EXPECT_LT(st.numTimedSteps, steps - 1); // some were not
  EXPECT_GT(st.numTimedSteps, 0u);
}

TEST(SpecDecode, ChunkedPrefillPrefixCachingPreemptionAndAbort) {
  // Few blocks (preemption), a small token budget (chunked prefill and cut
  // drafts), prefix caching (the repeated prompts share blocks) and aborts
  // at seeded random steps; the requests that finish must match the
  // reference, the aborted ones must have produced a prefix of it, and
  // nothing may stay held in either cache.
  for (const char *method : {"draft", "ngram"}) {
    SpecSetup s;
    s.method = method;
    s.numBlocks = 34; // the longest request (256 tokens) and little more
    s.maxNumBatchedTokens = 48;
    s.prefixCaching = true;
    s.draftBlocks = 200;
    spec::DraftProposer *d = nullptr;
    auto engine = makeEngine(s, &d);
    ASSERT_TRUE(engine);
    std::vector<NewRequest> rs = greedyRequests();
    // Two more with the prompts of r10 (prefix hits).
    rs.push_back(rs[10]);
    rs.back().requestId = "r10b";
    for (const NewRequest &r : rs)
      ASSERT_TRUE(engine->addRequest(r));
    // Three requests aborted at seeded random steps.
    std::mt19937 rng(7);
    std::map<int, std::string> abortAt;
    while (abortAt.size() < 3)
      abortAt[5 + int(rng() % 60)] = "r" + std::to_string(rng() % 11);
    std::set<std::string> aborted;
    Outputs out;
    int steps = 0;
    while (engine->hasUnfinishedRequests() && steps < 2000) {
      ++steps;
      auto victim = abortAt.find(steps);
      if (victim != abortAt.end() && !aborted.count(victim->second) &&
          engine->abortRequest(victim->second))
        aborted.insert(victim->second);
      auto step = engine->step();
      ASSERT_TRUE(step) << step.status().message();
      Status inv = engine->getScheduler().checkInvariants();
      ASSERT_TRUE(inv) << inv.message();
      for (const RequestOutput &o : *step) {
        auto &t = out[o.requestId];
        t.insert(t.end(), o.newTokenIds.begin(), o.newTokenIds.end());
      }
    }
    ASSERT_FALSE(engine->hasUnfinishedRequests()) << method;
    EXPECT_GT(engine->getScheduler().numPreemptions(), 0u) << method;
    const Outputs &ref = greedyReference();
    for (const auto &[id, tokens] : out) {
      std::string base = id == "r10b" ? "r10" : id;
      const std::vector<TokenId> &want = ref.at(base);
      if (aborted.count(id)) {
        ASSERT_LE(tokens.size(), want.size()) << id;
        EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), want.begin()))
            << "aborted " << id << " is not a prefix of its reference";
      } else {
        EXPECT_EQ(tokens, want) << method << " request " << id;
      }
    }
    const KVCacheManager &kv = engine->getScheduler().kvCache();
    EXPECT_EQ(kv.numRequests(), 0u);
    EXPECT_EQ(kv.pool().numFreeBlocks(), kv.pool().numUsableBlocks());
    if (d) {
      EXPECT_EQ(d->numTracked(), 0u);
      EXPECT_EQ(d->kvCache().numRequests(), 0u);
      EXPECT_EQ(d->kvCache().pool().numFreeBlocks(),
                d->kvCache().pool().numUsableBlocks());
    }
  }
}

TEST(SpecDecode, DraftRollsBackByLengthToWhatRecomputingGives) {
  // After any pattern of kept drafts, the draft proposes exactly what a
  // fresh draft (no cache) proposes for the same tokens.
  auto make = [] {
    auto d = spec::DraftProposer::create(draft(), exec::createCPUExecutor(),
                                         256, 4096, int64_t(kMaxModelLen));
    EXPECT_TRUE(d) << d.status().message();
    return std::move(*d);
  };
  auto rolling = make();
  std::vector<TokenId> tokens = heldout(3, 0, 13);
  RequestId id = "s";
  SamplingParams greedy;
  greedy.temperature = 0;
  std::mt19937 rng(3);
  for (int round = 0; round < 12; ++round) {
    spec::ProposeInput in;
    in.requestId = &id;
    in.tokens = &tokens;
    in.numPromptTokens = 13;
    in.params = &greedy;
    std::vector<spec::Proposal> got, want;
    ASSERT_TRUE(rolling->propose({in}, 5, got));
    auto fresh = make();
    ASSERT_TRUE(fresh->propose({in}, 5, want));
    ASSERT_EQ(got[0].tokens, want[0].tokens) << "round " << round;
    ASSERT_EQ(got[0].tokens.size(), 5u);
    // The first round caught up with the prompt; later ones compute at
    // most the last kept draft and the token after it.
    EXPECT_EQ(rolling->lastProposalSteady(), round > 0) << "round " << round;
    // The sequence and the drafts fed back (all but the last) are cached.
    EXPECT_EQ(rolling->numCached(id), tokens.size() + 4);
    // Keep a random number of drafts, then a token of our own.
    size_t keep = rng() % 6;
    tokens.insert(tokens.end(), got[0].tokens.begin(),
                  got[0].tokens.begin() + long(keep));
    tokens.push_back(TokenId(rng() % 4096));
  }
  // Three tokens decoded without speculation: catching up is not steady.
  for (int i = 0; i < 3; ++i)
    tokens.push_back(TokenId(rng() % 4096));
  spec::ProposeInput in;
  in.requestId = &id;
  in.tokens = &tokens;
  in.numPromptTokens = 13;
  in.params = &greedy;
  std::vector<spec::Proposal> got;
  ASSERT_TRUE(rolling->propose({in}, 5, got));
  EXPECT_FALSE(rolling->lastProposalSteady());
  rolling->release(id);
  EXPECT_EQ(rolling->numTracked(), 0u);
  EXPECT_EQ(rolling->kvCache().pool().numFreeBlocks(),
            rolling->kvCache().pool().numUsableBlocks());
}

TEST(SpecDecode, DraftWithoutRoomProposesNothingForThatSequence) {
  // 8 blocks of 4 tokens (one is the null block): room for one sequence
  // of 20 tokens and its drafts, not two. The second gets no proposal
  // (it decodes without speculation) until the first is released.
  auto d = spec::DraftProposer::create(draft(), exec::createCPUExecutor(), 8,
                                       4096, int64_t(kMaxModelLen));
  ASSERT_TRUE(d) << d.status().message();
  std::vector<TokenId> a = heldout(1, 0, 20), b = heldout(2, 0, 20);
  RequestId ia = "a", ib = "b";
  SamplingParams greedy;
  greedy.temperature = 0;
  auto input = [&](const RequestId &id, const std::vector<TokenId> &t) {
    spec::ProposeInput in;
    in.requestId = &id;
    in.tokens = &t;
    in.numPromptTokens = t.size();
    in.params = &greedy;
    return in;
  };
  std::vector<spec::Proposal> out;
  ASSERT_TRUE((*d)->propose({input(ia, a), input(ib, b)}, 4, out));
  EXPECT_EQ(out[0].tokens.size(), 4u);
  EXPECT_TRUE(out[1].tokens.empty());
  EXPECT_EQ((*d)->numTracked(), 1u) << "nothing is held for 'b'";
  (*d)->release(ia);
  ASSERT_TRUE((*d)->propose({input(ib, b)}, 4, out));
  EXPECT_EQ(out[0].tokens.size(), 4u);
}

/// The chi-square quantile with `dof` degrees of freedom at upper tail
/// probability 1e-6 (Wilson-Hilferty; within a few percent for dof >= 3).
double chiSquareCritical(int dof) {
  const double z = 4.753; // the standard normal's 1 - 1e-6 quantile
  double d = double(dof);
  double t = 1 - 2 / (9 * d) + z * std::sqrt(2 / (9 * d));
  return d * t * t * t;
}

/// Samples many seeded requests of one prompt with speculation and
/// compares the joint distribution of the first two new tokens (the
/// second comes out of verification) with the target's own: p(t1) p(t2 |
/// t1), computed from the target's logits through the same processing.
/// Each test fails falsely with probability about 1e-6 per seed set
/// (fixed seeds make it deterministic).
void expectDistributedAsTarget(const std::string &method) {
  constexpr int kSamples = 1500;
  SamplingParams params;
  params.temperature = 0.8f;
  params.topK = 4;
  // A text that repeats itself: its own next token is likely again, so
  // n-gram lookup proposes too.
  std::vector<TokenId> prompt = heldout(5, 10, 12);
  prompt.insert(prompt.end(), prompt.begin(), prompt.end() - 2);

  // The target's distributions.
  auto engine = core::Engine::create(target(), exec::createCPUExecutor(), 64);
  ASSERT_TRUE(engine);
  auto distribution = [&](const std::vector<TokenId> &ctx) {
    std::vector<core::SequenceState> st(1);
    st[0].id =
        "p" + std::to_string(ctx.size()) + "-" + std::to_string(ctx.back());
    st[0].tokens = ctx;
    std::vector<core::SequenceState *> seqs = {&st[0]};
    std::vector<float> logits;
    EXPECT_TRUE((*engine)->step(seqs, {int64_t(ctx.size())}, logits));
    (*engine)->release(st[0]);
    SampleRow row;
    row.params = &params;
    auto proc = processLogits(logits.data(), 4096, row);
    EXPECT_TRUE(proc);
    double best = *std::max_element(proc->begin(), proc->end());
    std::vector<double> p(4096);
    double total = 0;
    for (size_t v = 0; v < 4096; ++v)
      total += p[v] = std::exp((*proc)[v] - best);
    for (double &x : p)
      x /= total;
    return p;
  };
  std::vector<double> p1 = distribution(prompt);

  SpecSetup s;
  s.method = method;
  s.k = 3;
  s.numBlocks = 2048;
  s.draftBlocks = 4096;
  s.maxNumSeqs = 256;
  // Every request shares the prompt: its full blocks are computed once.
  s.prefixCaching = true;
  auto spec = makeEngine(s);
  ASSERT_TRUE(spec);
  std::vector<NewRequest> rs;
  for (int i = 0; i < kSamples; ++i) {
    NewRequest r = request("s" + std::to_string(i), prompt, 3, 0.8f);
    r.samplingParams.topK = 4;
    r.samplingParams.seed = 1000 + uint64_t(i);
    rs.push_back(r);
  }
  Outputs out = serve(*spec, rs);
  ASSERT_EQ(out.size(), size_t(kSamples));
  EXPECT_GT(spec->speculativeStats().numProposed, 0u);

  std::map<std::pair<TokenId, TokenId>, int> counts;
  for (const auto &[id, t] : out) {
    ASSERT_GE(t.size(), 2u);
    ++counts[{t[0], t[1]}];
  }
  // Expected counts over every (t1, t2) with mass; bins expecting fewer
  // than 5 samples are pooled into one.
  double chi2 = 0, pooledExpected = 0;
  int pooledObserved = 0, bins = 0;
  for (TokenId a = 0; a < 4096; ++a) {
    if (p1[size_t(a)] == 0)
      continue;
    std::vector<TokenId> ctx = prompt;
    ctx.push_back(a);
    std::vector<double> p2 = distribution(ctx);
    for (TokenId b = 0; b < 4096; ++b) {
      double e = kSamples * p1[size_t(a)] * p2[size_t(b)];
      if (e == 0) {
        EXPECT_EQ(counts.count({a, b}), 0u)
            << "sampled (" << a << ", " << b << "), which has no mass";
        continue;
      }
      int o = counts.count({a, b}) ? counts[{a, b}] : 0;
      if (e < 5) {
        pooledExpected += e;
        pooledObserved += o;
        continue;
      }
      chi2 += (o - e) * (o - e) / e;
      ++bins;
    }
  }
  if (pooledExpected > 0) {
    chi2 += (pooledObserved - pooledExpected) *
            (pooledObserved - pooledExpected) / pooledExpected;
    ++bins;
  }
  ASSERT_GE(bins, 4);
  EXPECT_LT(chi2, chiSquareCritical(bins - 1))
      << method << ": chi-square " << chi2 << " over " << bins << " bins";
}

TEST(SpecDecode, SampledDraftIsDistributedAsTheTarget) {
  expectDistributedAsTarget("draft");
}

TEST(SpecDecode, SampledNgramIsDistributedAsTheTarget) {
  expectDistributedAsTarget("ngram");
}

/// Request "s": two samples (n = 2) of 24 tokens of a prompt that repeats
/// itself, at temperature 0.9, with its own seed.
NewRequest seededSamples(uint64_t seed, float topP = 1.0f) {
  NewRequest r = request("s", prompts()[10], 24, 0.9f);
  r.samplingParams.topP = topP;
  r.samplingParams.seed = seed;
  r.samplingParams.n = 2;
  return r;
}

/// `r` served by an engine of its own and by one with the greedy requests
/// (16 tokens each) beside it.
struct AloneAndMixed {
  std::unique_ptr<core::ServingEngine> aloneEngine, mixedEngine;
  Outputs alone, mixed;
};
AloneAndMixed serveAloneAndMixed(const SpecSetup &s, const NewRequest &r) {
  AloneAndMixed out;
  out.aloneEngine = makeEngine(s);
  out.alone = serve(*out.aloneEngine, {r});
  out.mixedEngine = makeEngine(s);
  std::vector<NewRequest> rs = greedyRequests(16);
  rs.push_back(r);
  out.mixed = serve(*out.mixedEngine, rs);
  return out;
}

TEST(SpecDecode, SeededParallelSamplesIgnoreTheBatchMix) {
  // A seeded request with n = 2 samples the same tokens alone and among
  // other requests: verification draws are keyed by seed and position,
  // and the draft's and the target's rows do not depend on the batch.
  for (const char *method : {"draft", "ngram"}) {
    SpecSetup s;
    s.method = method;
    AloneAndMixed runs = serveAloneAndMixed(s, seededSamples(42, 0.9f));
    Outputs &a = runs.alone, &b = runs.mixed;
    ASSERT_EQ(a.size(), 2u);
    for (const char *id : {"s#0", "s#1"}) {
      ASSERT_EQ(a[id].size(), 24u) << method << " " << id;
      EXPECT_EQ(a[id], b[id]) << method << " " << id;
    }
    EXPECT_NE(a["s#0"], a["s#1"]) << "samples of one request differ";
    EXPECT_GT(runs.aloneEngine->speculativeStats().numProposed, 0u) << method;
  }
}

// Tests that a request sampling with its own seed gets the same tokens from
// an adaptive engine as from one that always speculates K: a position is
// drawn otherwise as a draft than as the bonus token, so its k must not
// follow the controller, which tries k = 0 and 1 in its first steps
// whatever the timing. The greedy requests beside it do follow it.
TEST(SpecDecode, SeededSamplesSpeculateAFixedK) {
  for (const char *method : {"draft", "ngram"}) {
    SpecSetup fixed;
    fixed.method = method;
    auto reference = makeEngine(fixed);
    Outputs want = serve(*reference, {seededSamples(7)});
    SpecSetup adaptive = fixed;
    adaptive.adaptive = true;
    AloneAndMixed runs = serveAloneAndMixed(adaptive, seededSamples(7));
    Outputs &a = runs.alone, &b = runs.mixed;
    for (const char *id : {"s#0", "s#1"}) {
      ASSERT_EQ(want[id].size(), 24u) << method << " " << id;
      EXPECT_EQ(a[id], want[id]) << method << " " << id << " alone";
      EXPECT_EQ(b[id], want[id]) << method << " " << id << " among others";
    }
    // The greedy requests took the controller's smaller k in some steps
    // (the draft proposes for every sequence it is asked to), and decoded
    // what the target alone does.
    const core::SpeculativeStats &st = runs.mixedEngine->speculativeStats();
    if (std::string(method) == "draft") {
      EXPECT_LT(st.numProposed, fixed.k * st.numVerifiedSeqSteps);
    }
    for (const auto &[id, tokens] : greedyReference()) {
      ASSERT_EQ(b[id].size(), 16u) << method << " " << id;
      EXPECT_TRUE(std::equal(b[id].begin(), b[id].end(), tokens.begin()))
          << method << " " << id;
    }
  }
}

TEST(SpecDecode, DraftWithAnotherVocabularyIsRefused) {
  auto zoo = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
  ASSERT_TRUE(bool(zoo));
  auto d = spec::DraftProposer::create(
      std::make_shared<const plan::Plan>(std::move(*zoo)),
      exec::createCPUExecutor(), 64, 4096, 64);
  ASSERT_FALSE(d);
  EXPECT_NE(d.status().message().find("vocabulary"), std::string::npos)
      << d.status().message();
}

TEST(SpecDecode, SpeculativeTokensWithoutAProposerAreRefused) {
  SchedulerConfig config;
  config.maxModelLen = kMaxModelLen;
  KVCacheConfig kv;
  kv.numBlocks = 64;
  kv.blockSize = kTargetBlock;
  core::SpeculativeConfig spec;
  spec.numSpeculativeTokens = 3;
  auto engine = core::ServingEngine::create(target(), exec::createCPUExecutor(),
                                            config, kv, std::move(spec));
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.status().message().find("proposer"), std::string::npos);
}

} // namespace
