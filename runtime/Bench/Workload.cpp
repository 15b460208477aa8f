//===- Workload.cpp - Synthetic serving workloads -------------------------===//

#include "runtime/Bench/Workload.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace folio::bench {

Expected<std::vector<BenchRequest>>
makeWorkload(const WorkloadOptions &options) {
  if (options.kind != "sharegpt-like")
    return Status::invalidArgument("unknown workload '" + options.kind +
                                   "'; supported: sharegpt-like");
  if (options.numRequests == 0)
    return Status::invalidArgument("the workload needs at least one request");
  if (options.maxModelLen < 2)
    return Status::invalidArgument(
        "max-model-len must leave room for a prompt and one output token");
  if (options.vocabSize == 0)
    return Status::invalidArgument("the vocabulary is empty");
  if (options.requestRate < 0)
    return Status::invalidArgument("the request rate must be >= 0");

  // ShareGPT (as vLLM's benchmarks sample it) has prompts with a median of
  // about 1/16 of a 4k context and outputs of about 1/10, both roughly
  // log-normal with a long right tail (sigma ~ 1). Scaling the medians to
  // the context keeps that shape for any model.
  double len = double(options.maxModelLen);
  std::mt19937_64 rng(options.seed);
  std::lognormal_distribution<double> promptDist(std::log(len / 16), 1.0);
  std::lognormal_distribution<double> outputDist(std::log(len / 10), 0.9);
  std::uniform_int_distribution<TokenId> token(0,
                                               TokenId(options.vocabSize - 1));
  std::exponential_distribution<double> gap(
      options.requestRate > 0 ? options.requestRate : 1.0);

  std::vector<BenchRequest> requests;
  double clock = 0;
  for (size_t i = 0; i < options.numRequests; ++i) {
    BenchRequest r;
    size_t prompt = std::clamp<size_t>(size_t(std::lround(promptDist(rng))), 1,
                                       options.maxModelLen - 1);
    r.outputLength = std::clamp<size_t>(size_t(std::lround(outputDist(rng))), 1,
                                        options.maxModelLen - prompt);
    for (size_t t = 0; t < prompt; ++t)
      r.prompt.push_back(token(rng));
    if (options.requestRate > 0)
      clock += gap(rng);
    r.arrivalTime = clock;
    requests.push_back(std::move(r));
  }
  return requests;
}

} // namespace folio::bench
