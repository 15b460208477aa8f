//===- Roofline.cpp - Decode vs bandwidth, prefill vs GEMM peak -----------===//
//
// Per thread count and stored weight dtype (one plan each, compiled once):
// load the model, warm up, then run
// `repeats` rounds of: prefill one sequence of `prefillTokens` random ids
// (timed) and decode `decodeTokens` greedy tokens after it (timed as a
// whole, batch building and argmax included: that is what a serving step
// costs). The ceilings are sampled before the first round and after every
// round, so each round has a probe on either side of it.
//
// Decode roofline: a token must stream every linear weight once plus the
// K and V rows of its context, so tokens/s <= bandwidth / (weight bytes +
// KV bytes per token). Embedding rows and norm weights (a few KB) are left
// out. Prefill: FLOPs = the linear steps' 2·M·N·K (counted by the executor)
// plus causal attention 4·H·D·T(T+1)/2 per layer, over oneDNN's bf16 peak
// (the best of the square sizes probed).
//
// Weight bytes are what the kernels stream as stored (int8: the codes plus
// their scales and bf16 outlier columns; fp8_e4m3: codes and scales; int4:
// the nibbles and each group's f16 scale and min), so each dtype is judged
// against the roofline of its own bytes; decode_speedup_vs_bf16 compares the
// dtypes of one thread count within the run.
//
// Two ratios are reported (plus, for context, decode against a read loop
// over a buffer of one token's bytes, which caches may partly hold). `paired`:
// each round over the higher of its two neighbouring probes, median over
// rounds. On a shared machine whose speed drifts with other tenants' load this
// compares a run with the ceiling of the same seconds. `vs_best`: the median
// run over the best probe sample of the whole configuration; stricter, and
// lowered by any drift.
//
//===----------------------------------------------------------------------===//

#include "tools/folio-bench/Roofline.h"

#include "tools/folio-bench/BenchData.h"
#include "tools/folio-bench/Json.h"
#include "tools/folio-bench/Probes.h"

#include "codegen/CPU/CPUFeatures.h"
#include "runtime/Core/Engine.h"

#include <algorithm>
#include <chrono>
#include <iostream>

namespace folio::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double maxOf(const std::vector<double> &v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

void stats(Json &j, const std::string &k, const std::vector<double> &v,
           double scale) {
  std::vector<double> s;
  for (double x : v)
    s.push_back(x * scale);
  j.key(k).beginObject();
  j.field("median", median(s)).field("max", maxOf(s));
  j.key("samples").values(s);
  j.endObject();
}

/// Model geometry the roofline needs, read off the plan.
struct Geometry {
  int64_t layers = 0, kvHeads = 0, headDim = 0, heads = 0;
  int64_t kvBytesPerPosition = 0; ///< all layers, K and V, as cached
};

Geometry geometry(const plan::Plan &p) {
  Geometry g;
  for (const plan::Argument &a : p.inputs) {
    const plan::ValueInfo &v = p.values[size_t(a.value)];
    if (v.kind != plan::ValueInfo::Kind::KVCache)
      continue;
    ++g.layers;
    g.kvHeads = v.kvHeads;
    g.headDim = v.headDim;
  }
  for (const plan::Step &s : p.steps)
    if (s.kind == "paged_attention") {
      const plan::ValueInfo &q = p.values[size_t(s.operands[0])];
      if (q.dims.size() == 3)
        g.heads = q.dims[1];
    }
  return g;
}

void profileJson(Json &j, const std::vector<exec::KindProfile> &prof,
                 double perUnit) {
  double total = 0;
  for (const auto &k : prof)
    total += k.seconds;
  j.beginArray();
  for (const auto &k : prof) {
    j.beginObject().field("kind", k.kind);
    j.field("ms", k.seconds / perUnit * 1e3);
    j.field("calls", double(k.calls) / perUnit);
    j.field("share", total > 0 ? k.seconds / total : 0.0);
    if (k.flops > 0)
      j.field("gflops_per_s", k.flops / k.seconds / 1e9);
    j.endObject();
  }
  j.endArray();
}

/// One probe point: a bandwidth sample and the best GEMM sample over the
/// probed sizes.
struct ProbePoint {
  double bandwidth = 0, gemmPeak = 0;
};

struct Probes {
  std::unique_ptr<BandwidthProbe> bandwidth;
  std::vector<std::unique_ptr<GemmProbe>> gemm; ///< bf16, one per size
  std::vector<double> bandwidthSamples, gemmSamples;

  ProbePoint sample() {
    ProbePoint p;
    if (bandwidth) {
      p.bandwidth = bandwidth->sample();
      bandwidthSamples.push_back(p.bandwidth);
    }
    for (auto &g : gemm) {
      double f = g->sample();
      gemmSamples.push_back(f);
      p.gemmPeak = std::max(p.gemmPeak, f);
    }
    return p;
  }
};

struct RunResult {
  std::vector<double> prefillSeconds, decodeSeconds;
  std::vector<ProbePoint> probes; ///< repeats + 1: before, between, after
  std::vector<exec::KindProfile> prefillProfile, decodeProfile;
  double prefillLinearFlops = 0;
  int64_t weightBytes = 0;
};

Status runModel(std::shared_ptr<const plan::Plan> plan,
                const RooflineOptions &o, const std::string &dtype,
                unsigned threads, Probes &probes, RunResult &out) {
  exec::ExecutorOptions eo;
  // Stored weights are read as stored; this only lets attention use bf16
  // where the weights are below f32, as for weights packed at load.
  eo.weights = dtype == "f32" ? exec::WeightType::F32 : exec::WeightType::BF16;
  eo.numThreads = threads;
  eo.profile = true;
  auto executor = exec::createCPUExecutor(eo);
  exec::Executor *ex = executor.get();
  int64_t bs = plan->configValue("block_size", 16);
  int64_t blocks = (o.prefillTokens + o.decodeTokens + bs - 1) / bs + 2;
  auto engine = core::Engine::create(plan, std::move(executor), blocks);
  if (!engine)
    return engine.status();
  out.weightBytes = ex->linearWeightBytes();
  int64_t vocab = plan->configValue("vocab", 0);
  uint64_t lcg = 12345;
  std::vector<TokenId> prompt;
  for (int64_t i = 0; i < o.prefillTokens; ++i) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    prompt.push_back(TokenId((lcg >> 33) % uint64_t(vocab > 0 ? vocab : 1)));
  }
  std::vector<float> logits;
  // Round 0 is a warm-up (page faults, oneDNN's JIT), never reported.
  for (int64_t r = 0; r <= o.repeats; ++r) {
    if (r == 1)
      out.probes.push_back(probes.sample());
    core::SequenceState seq;
    seq.id = "bench" + std::to_string(r);
    seq.tokens = prompt;
    std::vector<core::SequenceState *> seqs = {&seq};
    ex->resetProfile();
    auto t0 = Clock::now();
    if (Status s = (*engine)->step(seqs, {o.prefillTokens}, logits); !s)
      return s;
    auto t1 = Clock::now();
    auto prefillProfile = ex->profile();
    ex->resetProfile();
    int64_t steps =
        r == 0 ? std::min<int64_t>(o.decodeTokens, 4) : o.decodeTokens;
    for (int64_t i = 0; i < steps; ++i) {
      seq.tokens.push_back(TokenId(
          std::max_element(logits.begin(), logits.end()) - logits.begin()));
      if (Status s = (*engine)->step(seqs, {1}, logits); !s)
        return s;
    }
    auto t2 = Clock::now();
    (*engine)->release(seq);
    if (r == 0)
      continue;
    out.probes.push_back(probes.sample());
    out.prefillSeconds.push_back(
        std::chrono::duration<double>(t1 - t0).count());
    out.decodeSeconds.push_back(std::chrono::duration<double>(t2 - t1).count());
    out.prefillProfile = prefillProfile;
    out.decodeProfile = ex->profile();
    out.prefillLinearFlops = 0;
    for (const auto &k : prefillProfile)
      out.prefillLinearFlops += k.flops;
  }
  return Status::ok();
}

/// Per round: achieved[i] / ceiling(i), the ceiling being the higher of the
/// probes on either side of round i.
std::vector<double> pairedRatios(const std::vector<double> &achieved,
                                 const std::vector<ProbePoint> &probes,
                                 double ProbePoint::*field, double scale) {
  std::vector<double> out;
  for (size_t i = 0; i < achieved.size() && i + 1 < probes.size(); ++i) {
    double c = std::max(probes[i].*field, probes[i + 1].*field) * scale;
    if (c > 0)
      out.push_back(achieved[i] / c);
  }
  return out;
}

} // namespace

Expected<std::string> runRoofline(const PlanForDtype &planFor,
                                  const std::string &modelName,
                                  const RooflineOptions &o) {
  std::vector<std::shared_ptr<const plan::Plan>> plans;
  for (const std::string &dtype : o.weightDtypes) {
    std::cerr << "folio-bench: plan with " << dtype << " weights\n";
    Expected<std::shared_ptr<const plan::Plan>> p = planFor(dtype);
    if (!p)
      return p.status();
    plans.push_back(*p);
  }
  if (plans.empty())
    return Status::invalidArgument("--weight-dtype lists no dtype");
  std::shared_ptr<const plan::Plan> plan = plans.front();
  Geometry g = geometry(*plan);
  {
    // As the executor stores it: narrow dtypes and their scales included.
    std::unique_ptr<exec::Executor> probe = exec::createCPUExecutor();
    if (Status s = probe->load(plan); !s)
      return s;
    exec::KVCacheLayout layout = probe->kvCacheLayout();
    g.kvBytesPerPosition = layout.bytesPerBlock / layout.blockSize;
  }
  Json j;
  j.beginObject().field("mode", "roofline").field("model", modelName);
  j.key("model_shape").beginObject();
  j.field("layers", g.layers).field("heads", g.heads);
  j.field("kv_heads", g.kvHeads).field("head_dim", g.headDim);
  j.field("vocab", plan->configValue("vocab", 0));
  j.field("kv_bytes_per_position", g.kvBytesPerPosition);
  j.endObject();
  j.field("cpu", cpuName());
  j.field("isa", cpu::isaName(cpu::activeIsa()));
  j.field("repeats", o.repeats).field("prefill_tokens", o.prefillTokens);
  j.field("decode_tokens", o.decodeTokens);
  j.key("gemm_sizes")
      .values(std::vector<double>(o.gemmSizes.begin(), o.gemmSizes.end()));
  j.key("configs").beginArray();
  for (int64_t t : o.threads) {
    std::cerr << "folio-bench: " << t << " thread(s): probes\n";
    cpu::ThreadPool pool{unsigned(t)};
    Probes probes;
    probes.bandwidth =
        BandwidthProbe::create(size_t(o.bandwidthMiB) << 20, pool);
    // Without its buffer the roofline would read as 0 GB/s.
    if (!probes.bandwidth)
      return Status::invalidArgument(
          "--bandwidth-mib " + std::to_string(o.bandwidthMiB) +
          ": cannot allocate the read-bandwidth probe's buffer of that size");
    for (int64_t n : o.gemmSizes)
      if (auto g = GemmProbe::create(n, /*bf16=*/true, int(t)))
        probes.gemm.push_back(std::move(g));
    // The f32 peak is context for f32 weights, sampled once up front.
    std::vector<double> peakF32;
    if (auto g = GemmProbe::create(o.gemmSizes.back(), false, int(t)))
      for (int64_t i = 0; i < 2; ++i)
        peakF32.push_back(g->sample());

    j.beginObject().field("threads", t);
    j.key("runs").beginArray();
    std::vector<std::pair<std::string, double>> decodeMedians;
    for (size_t d = 0; d < o.weightDtypes.size(); ++d) {
      const std::string &dtype = o.weightDtypes[d];
      std::cerr << "folio-bench: " << t << " thread(s), " << dtype
                << " weights\n";
      RunResult r;
      if (Status s = runModel(plans[d], o, dtype, unsigned(t), probes, r); !s)
        return s;
      // Average context read per decoded token: the prompt plus the tokens
      // before it, itself included.
      double ctx = double(o.prefillTokens) + double(o.decodeTokens + 1) / 2;
      double kvBytes = ctx * double(g.kvBytesPerPosition);
      double bytesPerToken = double(r.weightBytes) + kvBytes;
      std::vector<double> decodeTps, prefillTps, prefillFlops, bw, peak;
      double attnFlops = 4.0 * double(g.heads * g.headDim * g.layers) *
                         double(o.prefillTokens) * double(o.prefillTokens + 1) /
                         2;
      for (double s : r.decodeSeconds)
        decodeTps.push_back(double(o.decodeTokens) / s);
      for (double s : r.prefillSeconds) {
        prefillTps.push_back(double(o.prefillTokens) / s);
        prefillFlops.push_back((r.prefillLinearFlops + attnFlops) / s);
      }
      for (const ProbePoint &p : r.probes) {
        bw.push_back(p.bandwidth);
        peak.push_back(p.gemmPeak);
      }
      std::vector<double> decodePaired = pairedRatios(
          decodeTps, r.probes, &ProbePoint::bandwidth, 1.0 / bytesPerToken);
      std::vector<double> prefillPaired =
          pairedRatios(prefillFlops, r.probes, &ProbePoint::gemmPeak, 1.0);

      decodeMedians.emplace_back(dtype, median(decodeTps));
      j.beginObject().field("weights", dtype);
      j.field("linear_weight_bytes", r.weightBytes);
      j.field("kv_bytes_per_token", kvBytes);
      j.key("probes").beginObject();
      stats(j, "read_bandwidth_gb_per_s", bw, 1e-9);
      stats(j, "gemm_peak_bf16_gflops", peak, 1e-9);
      j.endObject();
      j.key("decode").beginObject();
      stats(j, "tokens_per_s", decodeTps, 1.0);
      stats(j, "fraction_of_roofline_paired", decodePaired, 1.0);
      double roofline = maxOf(bw) / bytesPerToken;
      j.field("roofline_tokens_per_s_best", roofline);
      j.field("fraction_of_roofline_vs_best",
              roofline > 0 ? median(decodeTps) / roofline : 0.0);
      j.field("achieved_gb_per_s", median(decodeTps) * bytesPerToken / 1e9);
      // The same read loop over a buffer of one token's bytes, read again
      // and again: what the memory system gives a working set of this size
      // (the 300 MiB L3 here can hold much of a bf16 110M model, which the
      // 1 GiB probe never sees). Context for ratios above 1, not a ceiling
      // the target is judged against.
      if (auto ws = BandwidthProbe::create(size_t(bytesPerToken), pool)) {
        std::vector<double> wsBw;
        ws->sample(); // warm the caches as decode's repeated reads do
        for (int i = 0; i < 3; ++i)
          wsBw.push_back(ws->sample());
        stats(j, "working_set_read_gb_per_s", wsBw, 1e-9);
        j.field("fraction_of_working_set_read",
                median(decodeTps) * bytesPerToken / median(wsBw));
      }
      j.key("profile_ms_per_token");
      profileJson(j, r.decodeProfile, double(o.decodeTokens));
      j.endObject();
      j.key("prefill").beginObject();
      stats(j, "tokens_per_s", prefillTps, 1.0);
      stats(j, "gflops", prefillFlops, 1e-9);
      stats(j, "fraction_of_bf16_gemm_peak_paired", prefillPaired, 1.0);
      j.field("fraction_of_bf16_gemm_peak_vs_best",
              maxOf(peak) > 0 ? median(prefillFlops) / maxOf(peak) : 0.0);
      j.field("fraction_of_f32_gemm_peak_vs_best",
              maxOf(peakF32) > 0 ? median(prefillFlops) / maxOf(peakF32) : 0.0);
      j.key("profile_ms");
      profileJson(j, r.prefillProfile, 1.0);
      j.endObject();
      j.endObject();
    }
    j.endArray();
    // Decode tokens/s of each dtype over bf16's, medians of this run.
    auto bf16 = std::find_if(decodeMedians.begin(), decodeMedians.end(),
                             [](const auto &m) { return m.first == "bf16"; });
    if (bf16 != decodeMedians.end() && bf16->second > 0) {
      j.key("decode_speedup_vs_bf16").beginObject();
      for (const auto &[dtype, tps] : decodeMedians)
        j.field(dtype, tps / bf16->second);
      j.endObject();
    }
    // Every probe sample of this thread count, for context.
    stats(j, "read_bandwidth_gb_per_s", probes.bandwidthSamples, 1e-9);
    stats(j, "gemm_bf16_gflops_all_sizes", probes.gemmSamples, 1e-9);
    stats(j, "gemm_peak_f32_gflops", peakF32, 1e-9);
    j.endObject();
  }
  j.endArray().endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
