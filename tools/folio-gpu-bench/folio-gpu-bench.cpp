//===- folio-gpu-bench.cpp - Folio's generated kernels on a GPU, as JSON
//---===//
//
// Usage: folio-gpu-bench [--probe] [--quick] [--profile] [--plan M.folio]...
//
// Opens CUDA device 0, compiles the generated kernels for it with NVRTC and
// prints one JSON object: the device, the device-to-device copy bandwidth,
// and, for the Llama 1B shapes of models/bench/make_llama_1b.py, paged
// decode attention per cache dtype at a short and a long context (GB/s and
// the fraction of the copy) with the decode targets, prefill attention
// (TFLOP/s), kv_write, the row kernels, rotary, the gathers, the token
// ids' cast, the samplers, the penalties, the verifier of n-gram drafts,
// the linear kernel per weight dtype at its
// projection shapes and cuBLASLt's bf16 GEMM, each after its result
// matched the CPU's. Each --plan (compiled by folioc --target=sm_XX, e.g.
// of models/bench/make_llama_1b.py with --kv-cache-dtype fp8_e4m3 and
// bf16) runs on the CUDA executor: prefill and decode tokens/s (Model.h),
// decode with CUDA graphs and without (their ratio, graph_speedup); with
// --profile, then each launch kind's device and host time per step.
// --probe only opens the device. Without a GPU it prints why and exits
// with 77 (tools/gpu-check.sh's "skipped").
//
//===----------------------------------------------------------------------===//

#include "tools/folio-bench/Json.h"
#include "tools/folio-gpu-bench/GpuBench.h"
#include "tools/folio-gpu-bench/Model.h"

#include "runtime/Plan/PlanIO.h"

#include "codegen/CUDA/NVRTC/Nvrtc.h"

#include <chrono>
#include <cstring>
#include <iostream>

using namespace folio;
using namespace folio::gpubench;

namespace {

constexpr int kSkipped = 77;

int fail(const std::string &what, const Status &s) {
  std::cerr << "folio-gpu-bench: " << what << ": " << s.message() << "\n";
  return 1;
}

struct CacheKind {
  cpu::DType type;
  int group; ///< int8 / int4
  const char *name;
};

} // namespace

int main(int argc, char **argv) {
  bool probe = false, quick = false, profile = false;
  std::vector<std::string> plans;
  const char *usage = "usage: folio-gpu-bench [--probe] [--quick] [--profile] "
                      "[--plan M.folio]...\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--probe")) {
      probe = true;
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--profile")) {
      profile = true;
    } else if (!std::strcmp(argv[i], "--plan") && i + 1 < argc) {
      plans.push_back(argv[++i]);
    } else {
      std::cerr << "folio-gpu-bench: unknown argument '" << argv[i] << "'\n"
                << usage;
      return 2;
    }
  }
  if (!cuda::nvrtcAvailable()) {
    std::cerr << "folio-gpu-bench: this build has no CUDA toolkit "
                 "(configure with FOLIO_ENABLE_CUDA=ON)\n";
    return 2;
  }
  Expected<std::unique_ptr<device::CudaDevice>> opened =
      device::CudaDevice::open(0);
  if (!opened) {
    bench::Json j;
    j.beginObject();
    j.key("device").null();
    j.key("skipped").value(opened.status().message());
    j.endObject();
    std::cout << j.str() << "\n";
    std::cerr << "folio-gpu-bench: no GPU to measure: "
              << opened.status().message() << "\n";
    return kSkipped;
  }
  const device::CudaDevice &dev = **opened;
  if (probe) {
    std::cout << dev.name() << " " << dev.arch() << "\n";
    return 0;
  }

  // Llama 1B's attention (32 heads over 8 kv heads of 64) and projections.
  const int headDim = 64, kvHeads = 8, qPerKv = 4, block = 16;
  const CacheKind caches[] = {{cpu::DType::BF16, 0, "bf16"},
                              {cpu::DType::F16, 0, "f16"},
                              {cpu::DType::FP8E4M3, 0, "fp8_e4m3"},
                              {cpu::DType::FP8E5M2, 0, "fp8_e5m2"},
                              {cpu::DType::I8, headDim, "int8"},
                              {cpu::DType::I4, 32, "int4"},
                              {cpu::DType::F32, 0, "f32"}};
  struct Shape {
    int seqs, context;
  };
  const Shape shapes[] = {{quick ? 8 : 64, 512},
                          {quick ? 2 : 16, quick ? 2048 : 8192}};
  struct Projection {
    const char *name;
    int n, k;
  };
  const Projection projections[] = {
      {"qkv", 3072, 2048}, {"gate_up", 16384, 2048}, {"down", 2048, 8192}};
  const cpu::DType weights[] = {cpu::DType::BF16, cpu::DType::F16,
                                cpu::DType::I8,   cpu::DType::FP8E4M3,
                                cpu::DType::I4,   cpu::DType::F32};
  const int runs = quick ? 5 : 20;

  std::vector<cuda::GeneratedKernel> sources;
  std::vector<DecodeCase> decodes;
  std::vector<PrefillCase> prefills;
  std::vector<KVWriteCase> writes;
  for (const CacheKind &c : caches) {
    cuda::KVWriteSpec write{c.type, headDim, kvHeads, c.group};
    cuda::GeneratedKernel w;
    if (cpu::Status st = cuda::emitKVWrite(write, w); !st.ok())
      return fail("emitting kv_write", Status::internal(st.message()));
    sources.push_back(w);
    writes.push_back({write, quick ? 256 : 16384});
    // Both prefill kernels, f32 on CUDA cores and bf16 on tensor cores, on
    // a batch of prompts and on a chunk of new tokens after a long context.
    for (bool tensorCores : {false, true}) {
      cuda::PagedPrefillSpec prefill = cuda::defaultPagedPrefillSpec(
          c.type, headDim, block, kvHeads, qPerKv, c.group, tensorCores);
      cuda::GeneratedKernel p;
      if (cpu::Status st = cuda::emitPagedPrefill(prefill, p); !st.ok())
        return fail("emitting prefill", Status::internal(st.message()));
      sources.push_back(p);
      prefills.push_back(
          {prefill, quick ? 2 : 8, quick ? 256 : 2048, quick ? 256 : 2048});
      prefills.push_back(
          {prefill, quick ? 1 : 4, quick ? 1024 : 8192, quick ? 128 : 512});
    }
    cuda::PagedDecodeSpec spec;
    spec.cacheType = c.type;
    spec.headDim = headDim;
    spec.blockSize = block;
    spec.numKvHeads = kvHeads;
    spec.queriesPerKv = qPerKv;
    spec.group = c.group;
    cuda::GeneratedKernel main, combine;
    if (cpu::Status st = cuda::emitPagedDecode(spec, main, combine); !st.ok())
      return fail("emitting decode", Status::internal(st.message()));
    sources.push_back(main);
    sources.push_back(combine);
    // Other threads and partitions for the caches the decode targets compare,
    // to tune the defaults on a real device.
    std::vector<cuda::PagedDecodeSpec> alternatives;
    if (!quick && (c.type == cpu::DType::BF16 ||
                   c.type == cpu::DType::FP8E4M3 || c.type == cpu::DType::I8))
      for (int threads : {64, 128, 256})
        for (int partition : {128, 256, 512}) {
          if (threads == spec.threads && partition == spec.partition)
            continue;
          cuda::PagedDecodeSpec alt = spec;
          alt.threads = threads;
          alt.partition = partition;
          cuda::GeneratedKernel am, ac;
          if (cpu::Status st = cuda::emitPagedDecode(alt, am, ac); !st.ok())
            return fail("emitting decode", Status::internal(st.message()));
          alternatives.push_back(alt);
          sources.push_back(am);
          if (partition == 128) // one combine kernel per thread count
            sources.push_back(ac);
        }
    for (const Shape &sh : shapes)
      decodes.push_back({spec, sh.seqs, sh.context, alternatives});
  }
  std::vector<std::pair<LinearCase, const char *>> linears;
  for (cpu::DType w : weights)
    for (const Projection &p : projections) {
      cuda::LinearSpec spec;
      spec.weightType = w;
      spec.k = p.k;
      spec.groupSize = w == cpu::DType::I4 ? 128 : 0;
      cuda::GeneratedKernel g;
      if (cpu::Status st = cuda::emitLinear(spec, g); !st.ok())
        return fail("emitting linear", Status::internal(st.message()));
      sources.push_back(g);
      // Other threads and outputs per warp, to tune the defaults.
      std::vector<cuda::LinearSpec> alternatives;
      if (!quick)
        for (int threads : {128, 256})
          for (int outputs : {1, 2, 4}) {
            if (threads == spec.threads && outputs == spec.outputsPerWarp)
              continue;
            cuda::LinearSpec alt = spec;
            alt.threads = threads;
            alt.outputsPerWarp = outputs;
            if (cpu::Status st = cuda::emitLinear(alt, g); !st.ok())
              return fail("emitting linear", Status::internal(st.message()));
            sources.push_back(g);
            alternatives.push_back(alt);
          }
      for (int m : {1, 8})
        linears.push_back({LinearCase{spec, p.n, m, alternatives}, p.name});
    }
  // The row kernels of one Llama 1B layer, and its rotary, embedding and
  // samplers, over a prefill's worth of tokens.
  const int tokens = quick ? 256 : 4096;
  auto input = [](int index) {
    cuda::RowOp op;
    op.kind = cuda::RowOpKind::Input;
    op.index = index;
    return op;
  };
  auto apply = [](cuda::RowOpKind kind, const char *fn, int a, int b) {
    cuda::RowOp op;
    op.kind = kind;
    op.fn = fn;
    op.a = a;
    op.b = b;
    return op;
  };
  auto output = [](int index, int a) {
    cuda::RowOp op;
    op.kind = cuda::RowOpKind::Output;
    op.index = index;
    op.a = a;
    return op;
  };
  cuda::RowKernelSpec addNorm, gated;
  addNorm.label = "add_rms_norm";
  addNorm.dim = 2048;
  addNorm.threads = 256;
  addNorm.inputs = {cuda::RowInputKind::Row, cuda::RowInputKind::Row,
                    cuda::RowInputKind::Vector};
  cuda::RowOp norm = apply(cuda::RowOpKind::RmsNorm, "", 3, 2);
  norm.value = 1e-5;
  addNorm.ops = {input(0),    input(1),
                 input(2),    apply(cuda::RowOpKind::Binary, "add", 1, 0),
                 norm,        output(0, 3),
                 output(1, 4)};
  addNorm.numOutputs = 2;
  gated.label = "gated_silu";
  gated.dim = 8192;
  gated.threads = 1024;
  gated.inputs = {cuda::RowInputKind::Row, cuda::RowInputKind::Row};
  gated.ops = {input(0), input(1), apply(cuda::RowOpKind::Unary, "silu", 0, -1),
               apply(cuda::RowOpKind::Binary, "mul", 2, 1), output(0, 3)};
  gated.numOutputs = 1;
  const std::vector<RowCase> rowCases = {{addNorm, tokens}, {gated, tokens}};
  const RotaryCase rotaryCase{{headDim, headDim, false, kvHeads * qPerKv},
                              tokens};
  // The embedding lookup, and gather_rows picking the logits rows.
  const std::vector<GatherCase> gatherCases = {
      {{true, cpu::DType::BF16, 2048, 256}, tokens, 32000},
      {{false, cpu::DType::F32, 2048, 256}, 64, tokens}};
  // The token ids' widening to i64 that every plan starts with.
  const CastCase castCase{{cuda::CastType::I32, cuda::CastType::I64, 256},
                          tokens};
  // Greedy, a draw, the penalties a draw of a penalised request takes
  // first, and the logprobs after it: rebuilding the draw's keep sets, and
  // reading them as the executor runs it.
  using cuda::SampleMode;
  const std::vector<SampleCase> sampleCases = {
      {{SampleMode::Greedy, 256}, 64, 32000},
      {{SampleMode::Draw, 256}, 64, 32000},
      {{SampleMode::Penalize, 256}, 64, 32000},
      {{SampleMode::Logprobs, 256}, 64, 32000},
      {{SampleMode::Logprobs, 256}, 64, 32000, true}};
  // The verification of 16 sequences of up to 4 drafts: one-hot (n-gram
  // lookup), and with a draft model's distributions.
  const VerifyCase verifyCase{{SampleMode::Verify, 256}, 16, 4, 32000},
      draftVerifyCase{{SampleMode::Verify, 256}, 16, 4, 32000, true};
  for (const RowCase &c : rowCases) {
    cuda::GeneratedKernel g;
    if (cpu::Status st = cuda::emitRowKernel(c.spec, g); !st.ok())
      return fail("emitting a row kernel", Status::internal(st.message()));
    sources.push_back(g);
  }
  {
    cuda::GeneratedKernel r, e, gr, c, v;
    cpu::Status st = cuda::emitRotary(rotaryCase.spec, r);
    if (st.ok())
      st = cuda::emitGather(gatherCases[0].spec, e);
    if (st.ok())
      st = cuda::emitGather(gatherCases[1].spec, gr);
    if (st.ok())
      st = cuda::emitCast(castCase.spec, c);
    if (st.ok())
      st = cuda::emitSample(verifyCase.spec, v);
    if (!st.ok())
      return fail("emitting", Status::internal(st.message()));
    sources.insert(sources.end(), {r, e, gr, c, v});
    for (const SampleCase &sc : sampleCases) {
      cuda::GeneratedKernel g;
      if (cpu::Status s2 = cuda::emitSample(sc.spec, g); !s2.ok())
        return fail("emitting", Status::internal(s2.message()));
      sources.push_back(g);
    }
  }
  LoadedKernels kernels;
  if (Status s = loadKernels(dev, sources, kernels); !s)
    return fail("loading the kernels", s);

  size_t copyBytes = std::min<size_t>(size_t(1) << 30, dev.totalMemory() / 8);
  Expected<Timing> copy = measureCopy(dev, copyBytes, runs);
  if (!copy)
    return fail("the copy", copy.status());

  bench::Json j;
  // A measurement that fails (a result unlike the CPU's, a launch error)
  // puts an "error" in its entry instead of figures, and the run goes on:
  // one pass on a GPU then shows every kernel that fails, not the first.
  int failures = 0;
  auto succeeded = [&](const std::string &what, const auto &result) {
    if (result)
      return true;
    ++failures;
    std::cerr << "folio-gpu-bench: " << what << ": "
              << result.status().message() << "\n";
    j.key("error").value(result.status().message());
    return false;
  };
  // Progress on stderr, so a run cut short still says how far it came.
  auto elapsed = [start = std::chrono::steady_clock::now()] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  // A timed entry's ms, GB/s and fraction of the copy's bandwidth.
  auto bandwidth = [&](const Timing &t) {
    j.key("ms").value(t.ms);
    j.key("gb_per_s").value(t.gbPerS);
    j.key("fraction_of_copy").value(t.gbPerS / copy->gbPerS);
  };
  auto progress = [&](const std::string &what, const Timing &t) {
    std::cerr << "folio-gpu-bench: [" << elapsed() << " s] " << what << ": "
              << t.ms << " ms, " << t.gbPerS << " GB/s\n";
  };
  j.beginObject();
  j.key("device").beginObject();
  j.key("name").value(dev.name());
  j.key("arch").value(dev.arch());
  j.key("compiled_for").value(kernels.arch);
  j.key("jit_from_ptx").value(kernels.fromPtx);
  j.key("multiprocessors").value(dev.multiprocessors());
  j.key("memory_bytes").value(int64_t(dev.totalMemory()));
  j.key("driver").value(dev.driverVersion());
  j.key("nvrtc").value(cuda::nvrtcVersion());
  j.endObject();
  j.key("copy").beginObject();
  j.key("bytes").value(int64_t(copyBytes));
  j.key("ms").value(copy->ms);
  j.key("gb_per_s").value(copy->gbPerS);
  j.endObject();

  j.key("paged_decode").beginArray();
  std::vector<std::pair<DecodeCase, DecodeResult>> decodeRuns;
  for (const DecodeCase &c : decodes) {
    j.beginObject();
    j.key("cache").value(cpu::dtypeName(c.spec.cacheType));
    j.key("seqs").value(c.seqs);
    j.key("context").value(c.context);
    j.key("heads").value(c.spec.numKvHeads * c.spec.queriesPerKv);
    j.key("kv_heads").value(c.spec.numKvHeads);
    j.key("head_dim").value(c.spec.headDim);
    Expected<DecodeResult> r = measurePagedDecode(dev, kernels, c, runs);
    if (!succeeded(cuda::kernelName(c.spec), r)) {
      j.endObject();
      continue;
    }
    decodeRuns.push_back({c, *r});
    progress(cuda::kernelName(c.spec), r->timing);
    j.key("partitions").value(r->partitions);
    j.key("bytes").value(r->timing.bytes);
    bandwidth(r->timing);
    j.key("max_rel_diff_vs_cpu").value(r->maxRelDiff);
    if (!r->alternatives.empty()) {
      j.key("alternatives").beginArray();
      for (const DecodeResult::Alternative &alt : r->alternatives) {
        j.beginObject();
        j.key("threads").value(alt.spec.threads);
        j.key("partition").value(alt.spec.partition);
        j.key("partitions").value(alt.partitions);
        bandwidth(alt.timing);
        j.key("max_rel_diff_vs_cpu").value(alt.maxRelDiff);
        j.endObject();
        progress("  threads " + std::to_string(alt.spec.threads) +
                     " partition " + std::to_string(alt.spec.partition),
                 alt.timing);
      }
      j.endArray();
    }
    j.endObject();
  }
  j.endArray();

  // The decode targets (GpuBench.h), read off the runs above.
  Expected<DecodeTargets> targets = decodeTargets(decodeRuns, copy->gbPerS);
  j.key("decode_targets").beginObject();
  if (!succeeded("the decode targets", targets)) {
    j.endObject();
  } else {
    j.key("min_fraction_of_copy").value(targets->minFractionOfCopy);
    j.key("slowest").value(targets->slowest);
    j.key("bandwidth_target").value(kDecodeBandwidthTarget);
    j.key("bandwidth_met").value(targets->bandwidthMet);
    j.key("fp8_over_bf16_time_short_context").value(targets->fp8OverBf16Short);
    j.key("fp8_over_bf16_time_long_context").value(targets->fp8OverBf16Long);
    j.key("fp8_met").value(targets->fp8Met);
    j.endObject();
  }

  j.key("paged_prefill").beginArray();
  for (const PrefillCase &c : prefills) {
    j.beginObject();
    j.key("cache").value(cpu::dtypeName(c.spec.cacheType));
    j.key("seqs").value(c.seqs);
    j.key("context").value(c.context);
    j.key("new_tokens").value(c.queries);
    j.key("products")
        .value(c.spec.tensorCores ? "bf16 tensor cores" : "f32 CUDA cores");
    j.key("query_tile").value(c.spec.queryTile);
    j.key("key_tile").value(c.spec.keyTile);
    Expected<PrefillResult> r = measurePagedPrefill(dev, kernels, c, runs);
    if (!succeeded(cuda::kernelName(c.spec), r)) {
      j.endObject();
      continue;
    }
    progress(cuda::kernelName(c.spec), r->timing);
    j.key("ms").value(r->timing.ms);
    j.key("tflop_per_s").value(r->tflopsPerS);
    j.key("gb_per_s").value(r->timing.gbPerS);
    j.key("max_rel_diff_vs_cpu").value(r->maxRelDiff);
    j.endObject();
  }
  j.endArray();

  j.key("kv_write").beginArray();
  for (const KVWriteCase &c : writes) {
    j.beginObject();
    j.key("cache").value(cpu::dtypeName(c.spec.cacheType));
    j.key("tokens").value(c.tokens);
    Expected<KVWriteResult> r = measureKVWrite(dev, kernels, c, runs);
    if (!succeeded(cuda::kernelName(c.spec), r)) {
      j.endObject();
      continue;
    }
    progress(cuda::kernelName(c.spec), r->timing);
    j.key("bytes").value(r->timing.bytes);
    bandwidth(r->timing);
    j.endObject();
  }
  j.endArray();

  j.key("rows").beginArray();
  for (const RowCase &c : rowCases) {
    j.beginObject();
    j.key("kernel").value(c.spec.label);
    j.key("dim").value(c.spec.dim);
    j.key("rows").value(c.rows);
    Expected<RowResult> r = measureRowKernel(dev, kernels, c, runs);
    if (!succeeded(cuda::kernelName(c.spec), r)) {
      j.endObject();
      continue;
    }
    progress(cuda::kernelName(c.spec), r->timing);
    bandwidth(r->timing);
    j.key("max_rel_diff_vs_double").value(r->maxRelDiff);
    j.endObject();
  }
  auto simple = [&](const char *kind, const std::string &name,
                    const Expected<Timing> &t) {
    j.beginObject();
    j.key("kernel").value(kind);
    j.key("name").value(name);
    if (!succeeded(name, t)) {
      j.endObject();
      return;
    }
    progress(name, *t);
    bandwidth(*t);
    j.endObject();
  };
  {
    Expected<Timing> t = measureRotary(dev, kernels, rotaryCase, runs);
    simple("rotary", cuda::kernelName(rotaryCase.spec), t);
    for (const GatherCase &c : gatherCases) {
      t = measureGather(dev, kernels, c, runs);
      simple(c.spec.embedding ? "embedding" : "gather_rows",
             cuda::kernelName(c.spec), t);
    }
    t = measureCast(dev, kernels, castCase, runs);
    simple("cast", cuda::kernelName(castCase.spec), t);
    for (const SampleCase &c : sampleCases) {
      t = measureSample(dev, kernels, c, runs);
      simple(c.spec.mode == SampleMode::Penalize   ? "penalize"
             : c.spec.mode != SampleMode::Logprobs ? "sample"
             : c.afterDraw                         ? "logprobs (keep sets read)"
                           : "logprobs (keep sets rebuilt)",
             cuda::kernelName(c.spec), t);
    }
    t = measureVerify(dev, kernels, verifyCase, runs);
    simple("verify", cuda::kernelName(verifyCase.spec), t);
    t = measureVerify(dev, kernels, draftVerifyCase, runs);
    simple("verify (draft distributions)", cuda::kernelName(verifyCase.spec),
           t);
  }
  j.endArray();

  j.key("linear").beginArray();
  for (const auto &[c, name] : linears) {
    j.beginObject();
    j.key("weights").value(cpu::dtypeName(c.spec.weightType));
    j.key("projection").value(name);
    j.key("n").value(c.n);
    j.key("k").value(c.spec.k);
    j.key("m").value(c.m);
    Expected<LinearResult> r = measureLinear(dev, kernels, c, runs);
    if (!succeeded(cuda::kernelName(c.spec), r)) {
      j.endObject();
      continue;
    }
    progress(cuda::kernelName(c.spec) + " m=" + std::to_string(c.m), r->timing);
    j.key("bytes").value(r->timing.bytes);
    bandwidth(r->timing);
    j.key("max_diff_vs_cpu_in_bounds").value(r->maxBoundFraction);
    j.key("threads").value(c.spec.threads);
    j.key("outputs_per_warp").value(c.spec.outputsPerWarp);
    if (!r->alternatives.empty()) {
      j.key("alternatives").beginArray();
      for (const LinearResult::Alternative &alt : r->alternatives) {
        j.beginObject();
        j.key("threads").value(alt.spec.threads);
        j.key("outputs_per_warp").value(alt.spec.outputsPerWarp);
        bandwidth(alt.timing);
        j.key("max_diff_vs_cpu_in_bounds").value(alt.maxBoundFraction);
        j.endObject();
        progress("  threads " + std::to_string(alt.spec.threads) +
                     " outputs per warp " +
                     std::to_string(alt.spec.outputsPerWarp),
                 alt.timing);
      }
      j.endArray();
    }
    j.endObject();
  }
  j.endArray();
  // cuBLASLt's bf16 GEMM at prefill and decode-batch sizes: the tensor-core
  // path for the rows the generated linear kernel is not made for.
  j.key("cublaslt");
  Expected<std::unique_ptr<device::CublasLt>> lt = device::CublasLt::open(dev);
  if (!lt) {
    j.beginObject();
    j.key("skipped").value(lt.status().message());
    j.endObject();
  } else {
    j.beginObject();
    j.key("version").value(int64_t((*lt)->version()));
    // One array of GEMMs per type: each projection at 16 and many rows.
    auto gemms = [&](const char *key, const char *type, bool run,
                     auto &&measure) {
      j.key(key).beginArray();
      if (run)
        for (const Projection &p : projections)
          for (int m : {16, quick ? 128 : 2048}) {
            j.beginObject();
            j.key("projection").value(p.name);
            j.key("m").value(m);
            j.key("n").value(p.n);
            j.key("k").value(p.k);
            Expected<GemmResult> r = measure(m, p.n, p.k);
            // No algorithm for it here: the executor takes another path
            // (docs/cuda-codegen.md), so the check goes on without it.
            if (!r && r.status().code() == StatusCode::NotFound) {
              j.key("skipped").value(r.status().message());
              j.endObject();
              continue;
            }
            if (!succeeded(std::string("cuBLASLt ") + type, r)) {
              j.endObject();
              continue;
            }
            progress(std::string("cuBLASLt ") + type + " " + p.name +
                         " m=" + std::to_string(m),
                     r->timing);
            j.key("ms").value(r->timing.ms);
            j.key("tflop_per_s").value(r->tflopsPerS);
            j.key("gb_per_s").value(r->timing.gbPerS);
            j.key("max_diff_in_bounds").value(r->maxBoundFraction);
            j.endObject();
          }
      j.endArray();
    };
    gemms("linear_bf16", "bf16", true, [&](int m, int n, int k) {
      return measureCublasLinear(dev, **lt, m, n, k, runs);
    });
    // The row-scaled fp8 GEMM of fp8_e4m3 weights (sm_89 and later).
    gemms("linear_fp8", "fp8", dev.major() * 10 + dev.minor() >= 89,
          [&](int m, int n, int k) {
            return measureCublasLinearFp8(dev, **lt, m, n, k, runs);
          });
    j.endObject();
  }
  // Whole-model decode and prefill: the plans given, on the CUDA executor.
  if (plans.empty()) {
    j.key("model").beginObject();
    j.key("skipped").value(
        "no --plan given (compile one with folioc --target=" + dev.arch() +
        ", e.g. of models/bench/make_llama_1b.py, once per --kv-cache-dtype)");
    j.endObject();
  } else {
    j.key("model").beginArray();
    for (const std::string &path : plans) {
      j.beginObject();
      j.key("plan").value(path);
      Expected<plan::Plan> loaded = plan::readPlan(path);
      if (!succeeded(path, loaded)) {
        j.endObject();
        continue;
      }
      ModelCase c;
      c.prompt = quick ? 128 : 512;
      c.context = quick ? 256 : 1024;
      c.batches = quick ? std::vector<int>{1, 8} : std::vector<int>{1, 8, 32};
      c.steps = quick ? 8 : 32;
      c.profile = profile;
      Expected<std::unique_ptr<device::CudaDevice>> own =
          device::CudaDevice::open(0);
      if (!succeeded(path, own)) {
        j.endObject();
        continue;
      }
      Expected<ModelResult> r = measureModel(
          std::move(*own),
          std::make_shared<const plan::Plan>(std::move(*loaded)), c);
      if (!succeeded(path, r)) {
        j.endObject();
        continue;
      }
      std::cerr << "folio-gpu-bench: [" << elapsed() << " s] " << path
                << ": prefill " << r->prefillTokensPerS << " tokens/s\n";
      j.key("kv_cache").value(r->kvCache);
      j.key("weight_bytes").value(r->weightBytes);
      j.key("max_diff_vs_cpu").value(r->checkedDiff);
      j.key("prefill").beginObject();
      j.key("tokens").value(c.prompt);
      j.key("ms").value(r->prefillMs);
      j.key("tokens_per_s").value(r->prefillTokensPerS);
      j.endObject();
      j.key("decode").beginArray();
      for (const ModelDecode &d : r->decode) {
        j.beginObject();
        j.key("batch").value(d.batch);
        j.key("context").value(c.context);
        j.key("ms_per_step").value(d.msPerStep);
        j.key("tokens_per_s").value(d.tokensPerS);
        j.key("eager_ms_per_step").value(d.eagerMsPerStep);
        j.key("graph_speedup")
            .value(d.msPerStep > 0 ? d.eagerMsPerStep / d.msPerStep : 0.0);
        j.endObject();
      }
      j.endArray();
      if (!r->warnings.empty()) {
        // Graphs turned off: ms_per_step timed eager steps.
        j.key("warnings").beginArray();
        for (const std::string &w : r->warnings) {
          std::cerr << "folio-gpu-bench: warning: " << w << "\n";
          j.value(w);
        }
        j.endArray();
      }
      if (profile) {
        j.key("profile").beginArray();
        for (const ModelProfile &p : r->profiles) {
          j.beginObject();
          j.key("step").value(p.what);
          j.key("batch").value(p.batch);
          j.key("steps").value(p.steps);
          j.key("wall_ms_per_step").value(p.wallMs);
          j.key("kinds").beginArray();
          for (const ModelProfileKind &k : p.kinds) {
            j.beginObject();
            j.key("kind").value(k.kind);
            j.key("device_ms").value(k.deviceMs);
            j.key("host_ms").value(k.hostMs);
            j.key("calls").value(k.calls);
            j.endObject();
          }
          j.endArray();
          j.endObject();
        }
        j.endArray();
      }
      j.endObject();
    }
    j.endArray();
  }
  j.key("failures").value(failures);
  j.endObject();
  std::cout << j.str() << "\n";
  return failures ? 1 : 0;
}
