//===- ZooRun.h - Compiling and running zoo models in tests -----*- C++ -*-===//

#ifndef FOLIO_TEST_UNITTESTS_CORE_ZOORUN_H
#define FOLIO_TEST_UNITTESTS_CORE_ZOORUN_H

#include "test/unittests/Core/Fixtures.h"

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <vector>

namespace folio::testing {

struct ModelForm {
  const char *arch;
  const char *form;
};

/// The ORT references of a model form; cached_external shares cached's
/// (same graph, weights in a data file).
inline RefFixture loadFixtureFor(const ModelForm &mf) {
  std::string form =
      std::string(mf.form) == "cached_external" ? "cached" : mf.form;
  return loadFixture(mf.arch, form);
}

inline std::ostream &operator<<(std::ostream &os, const ModelForm &m) {
  return os << m.arch << "/" << m.form;
}

/// Every zoo model and form (27).
inline const std::vector<ModelForm> &zooModels() {
  static const std::vector<ModelForm> all = {
      {"llama", "cached"},       {"llama", "cached_nopos"},
      {"llama", "nocache"},      {"llama", "cached_external"},
      {"llama", "fused_onnx23"}, {"llama", "fused_ms"},
      {"mistral", "cached"},     {"mistral", "cached_nopos"},
      {"mistral", "nocache"},    {"qwen2", "cached"},
      {"qwen2", "cached_nopos"}, {"qwen2", "nocache"},
      {"gpt2", "cached"},        {"gpt2", "cached_nopos"},
      {"gpt2", "nocache"},       {"phi2", "cached"},
      {"phi2", "cached_nopos"},  {"phi2", "nocache"},
      {"gpt_neox", "cached"},    {"gpt_neox", "cached_nopos"},
      {"gpt_neox", "nocache"},   {"gptj", "cached"},
      {"gptj", "cached_nopos"},  {"gptj", "nocache"},
      {"gemma", "cached"},       {"gemma", "cached_nopos"},
      {"gemma", "nocache"}};
  return all;
}

inline std::shared_ptr<const plan::Plan> compile(const std::string &arch,
                                                 const std::string &form,
                                                 int64_t blockSize = 16) {
  mlir::folio::CompileToPlanOptions options;
  options.blockSize = blockSize;
  // Parity with ONNX Runtime is an f32 property: an explicit f32 cache.
  options.kvCacheDtype = "f32";
  auto p = mlir::folio::compileONNXToPlan(zooPath(arch + "/" + form + ".onnx"),
                                          options);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return nullptr;
  }
  return std::make_shared<const plan::Plan>(std::move(*p));
}

/// Runs `prompts` for `steps` tokens, keeping the logits; `o.maxNewTokens`
/// and `o.keepLogits` are set here.
inline core::GenerateResult
generate(std::shared_ptr<const plan::Plan> p,
         const std::vector<std::vector<TokenId>> &prompts, int64_t steps,
         core::GenerateOptions o = {}, const exec::ExecutorOptions &eo = {}) {
  int64_t bs = p->configValue("block_size", 16);
  auto engine =
      core::Engine::create(p, exec::createCPUExecutor(eo),
                           core::Engine::blocksFor(prompts, steps, bs));
  EXPECT_TRUE(engine) << engine.status().message();
  if (!engine)
    return {};
  o.maxNewTokens = steps;
  o.keepLogits = true;
  auto r = (*engine)->generate(prompts, o);
  EXPECT_TRUE(r) << r.status().message();
  return r ? *r : core::GenerateResult();
}

/// max |got - ref| / max |ref| over n values.
inline double relDiff(const float *got, const float *ref, int64_t n) {
  double d = 0, m = 0;
  for (int64_t i = 0; i < n; ++i) {
    d = std::max(d, double(std::fabs(got[i] - ref[i])));
    m = std::max(m, double(std::fabs(ref[i])));
  }
  return d / m;
}

} // namespace folio::testing

#endif // FOLIO_TEST_UNITTESTS_CORE_ZOORUN_H
