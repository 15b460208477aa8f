//===- ZooLlama.h - The zoo llama compiled and run ------------*- C++ -*-===//
//
// The plan tests compile models/zoo/llama/cached.onnx and run two greedy
// prompts on it, so that a plan written, read or extended is checked by the
// tokens and logits it gives.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_PLAN_ZOOLLAMA_H
#define FOLIO_TEST_UNITTESTS_PLAN_ZOOLLAMA_H

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace folio::testing {

inline plan::Plan compileZooLlama() {
  auto p = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return std::move(*p);
}

/// Prompts {5, 6, 7} and {9}, `newTokens` greedy tokens each, logits kept.
inline core::GenerateResult runZooLlama(std::shared_ptr<const plan::Plan> p,
                                        int64_t newTokens) {
  std::vector<std::vector<TokenId>> prompts = {{5, 6, 7}, {9}};
  auto engine =
      core::Engine::create(p, exec::createCPUExecutor(),
                           core::Engine::blocksFor(prompts, newTokens, 16));
  EXPECT_TRUE(engine) << engine.status().message();
  core::GenerateOptions o;
  o.maxNewTokens = newTokens;
  o.keepLogits = true;
  auto r = (*engine)->generateGreedy(prompts, o);
  EXPECT_TRUE(r) << r.status().message();
  return *r;
}

} // namespace folio::testing

#endif // FOLIO_TEST_UNITTESTS_PLAN_ZOOLLAMA_H
