//===- folio-run.cpp - Generate tokens from a model on the CPU ------------===//
//
// folio-run --model M.onnx|M.folio --prompt-ids 1,2,3 [--prompt-ids ...]
//           --max-new-tokens N [--temperature T --top-k K --top-p P --seed S]
//           [--weight-dtype D] [--dump-logits out.npy] [--json]
//
// An .onnx is compiled by running folioc (this tool links the runtime
// only). Errors print one line and exit 1; bad flags exit 2.
//
//===----------------------------------------------------------------------===//

#include "tools/folio-run/Npy.h"
#include "tools/folio-run/Options.h"

#include "runtime/Core/Engine.h"
#include "runtime/Device/CudaExecutor.h"
#include "runtime/Device/KernelImages.h"
#include "runtime/Plan/PlanIO.h"
#include "tools/common/LoadModel.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>

using namespace folio;

namespace {

Expected<plan::Plan> loadModel(const run::Options &o) {
  tools::ModelLoadOptions options;
  options.blockSize = o.blockSize;
  options.kvCacheDtype = o.kvCacheDtype;
  options.weightDtype = o.weightDtype;
  options.verifyWeights = o.verifyWeights;
  return tools::loadOrCompileModel(o.model, options);
}

void printIds(std::ostream &os, const std::vector<TokenId> &ids) {
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i)
    os << (i ? "," : "") << ids[i];
  os << "]";
}

int fail(const Status &s, int code = 1) {
  std::cerr << "folio-run: error: " << s.message() << "\n";
  return code;
}

} // namespace

int main(int argc, char **argv) {
  Expected<run::Options> parsed = run::parseOptions(argc, argv);
  if (!parsed) {
    std::cerr << "folio-run: error: " << parsed.status().message() << "\n"
              << run::kUsage;
    return 2;
  }
  const run::Options &o = *parsed;
  if (o.help) {
    std::cout << run::kUsage;
    return 0;
  }
  Expected<plan::Plan> loaded = loadModel(o);
  if (!loaded)
    return fail(loaded.status());
  auto plan = std::make_shared<const plan::Plan>(std::move(*loaded));
  if (o.printKernels) {
    std::cout << device::describeKernels(*plan);
    return 0;
  }
  Expected<device::DeviceChoice> dev =
      device::selectDevice(o.device, plan.get());
  if (!dev)
    return fail(dev.status());
  if (!dev->notice.empty())
    std::cerr << "folio-run: note: " << dev->notice << "\n";
  // Weights folioc stored packed run as stored; packing is fixed then.
  if (o.weightDtypeGiven && !plan->weights.empty() &&
      tools::isPlanPath(o.model))
    return fail(Status::invalidArgument(
        "--weight-dtype " + o.weightDtype + ": '" + o.model +
        "' stores its linear weights packed (folioc --weight-dtype), and "
        "they run as stored; recompile with folioc --weight-dtype=" +
        o.weightDtype + " to change them"));
  core::GenerateOptions gopts;
  gopts.maxNewTokens = o.maxNewTokens;
  gopts.maxModelLen = o.maxModelLen;
  gopts.keepLogits = !o.dumpLogits.empty();
  gopts.sampling.temperature = float(o.temperature);
  gopts.sampling.topK = int32_t(std::min<int64_t>(o.topK, INT32_MAX));
  gopts.sampling.topP = float(o.topP);
  gopts.sampling.seed = o.seed;
  // Lengths past the plan's positions or proven context are refused before
  // the KV cache is sized for them.
  if (Status s = core::Engine::checkGenerate(
          *plan, plan->configValue("vocab", 0), o.prompts, gopts);
      !s)
    return fail(s);
  int64_t blockSize = plan->configValue("block_size", 16);
  int64_t numBlocks =
      core::Engine::blocksFor(o.prompts, o.maxNewTokens, blockSize);
  exec::ExecutorOptions eopts;
  // How the executor packs weights a plan keeps as constants (folioc stores
  // every linear weight packed, so this matters only for plans without).
  if (Expected<exec::WeightType> wt = exec::parseWeightType(o.weightDtype))
    eopts.weights = *wt;
  else if (o.weightDtypeGiven && plan->weights.empty())
    return fail(Status::invalidArgument(
        "--weight-dtype " + o.weightDtype + ": '" + o.model +
        "' keeps its linear weights unpacked, and packing them at load "
        "takes f32, bf16 or f16; recompile with folioc --weight-dtype=" +
        o.weightDtype));
  eopts.numThreads = unsigned(o.threads);
  eopts.cudaGraphs = !o.enforceEager;
  eopts.warn = [](const std::string &w) {
    std::cerr << "folio-run: warning: " << w << "\n";
  };
  Expected<std::unique_ptr<exec::Executor>> executor =
      device::createExecutor(*dev, eopts);
  if (!executor)
    return fail(executor.status());
  Expected<std::unique_ptr<core::Engine>> engine =
      core::Engine::create(plan, std::move(*executor), numBlocks);
  if (!engine)
    return fail(engine.status());
  Expected<core::GenerateResult> result = (*engine)->generate(o.prompts, gopts);
  if (!result)
    return fail(result.status());
  if (!o.dumpLogits.empty())
    if (Status s = run::writeNpyF32(
            o.dumpLogits, result->logits,
            {int64_t(o.prompts.size()), o.maxNewTokens, result->vocab});
        !s)
      return fail(s);
  if (o.json) {
    std::cout << "{\"outputs\":[";
    for (size_t i = 0; i < o.prompts.size(); ++i) {
      std::cout << (i ? "," : "") << "{\"prompt_ids\":";
      printIds(std::cout, o.prompts[i]);
      std::cout << ",\"token_ids\":";
      printIds(std::cout, result->tokens[i]);
      std::cout << "}";
    }
    std::cout << "]}\n";
  } else {
    for (size_t i = 0; i < o.prompts.size(); ++i) {
      std::cout << "prompt " << i + 1 << ": ";
      printIds(std::cout, result->tokens[i]);
      std::cout << "\n";
    }
  }
  return 0;
}
