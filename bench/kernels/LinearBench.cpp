//===- LinearBench.cpp - Linear layers of a Llama-110M step ---------------===//
//
// Not a Google Benchmark binary: the machines are shared and their speed
// swings 2x within a minute, so every variant is timed in the same round,
// rounds repeat, and the output is the median per variant (and, for decode,
// the median ratio to a read loop timed in the same round).
//
//  decode: the GEMV sequence of one token (12 layers of q, k, v, o,
//    gate/up, down, then lm_head), M = 1, bf16; variants: gate and up apart
//    or stacked into one [2F, K] weight, q/k/v apart or stacked, and the
//    weights borrowed from plain 4 KiB-page memory instead of packed into
//    PackedWeight's huge-page chunks.
//  verify: the same token's linears (bf16, f16, int8, fp8_e4m3, then int4 with
//    int8 x in groups of 128, 64 and 32) at the few rows a speculative verify
//    step has and at batch sizes up to 64, through the GEMV kernel for every M
//    and through linear() (oneDNN or the quantized GEMMs above kSmallM), each
//    reported as the median ratio of its time to M = 1's GEMV in the same
//    round and as linear()'s time.
//  prefill: each distinct linear shape at M = 512 through linear(), on the
//    same thread count, in bf16 (oneDNN), f16 and in int8, fp8_e4m3, int4 with
//    f32 x and int4 with int8 x in groups of 128, 64 and 32 (with and
//    without Folio's AMX GEMMs where the host has AMX), with oneDNN's
//    square bf16 GEMM (folio-bench's peak probe) sampled in every round: each
//    shape is reported as GFLOP/s per dtype and bf16's median ratio to the
//    probe of its own round (on these shared vCPUs the probe alone swings 3x
//    between minutes).
//
//  isa: one token's linears in every weight dtype (f32, bf16, f16, int8,
//    fp8_e4m3, int4 with int8 x as folioc stores it, and int4_f32x: int4
//    with --int4-activations=f32) under every instruction-set level the host
//    runs (scalar, avx2, avx512), at M = 1, 4 and 16, all in the same rounds;
//    prints JSON: per dtype and level the median time, M = 1's GB/s and
//    its ratio to the read loop, and the speedup over the scalar kernels.
//
// Usage: folio-linear-bench [rounds=15] [threads=1]
//                           [decode|verify|prefill|both|isa]
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"
#include "tools/folio-bench/Probes.h"

// GCC 12 warns falsely inside its own _mm512_reduce_add_ps (bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace folio::cpu;

namespace {

constexpr int64_t kHidden = 768, kQ = 768, kKv = 256, kFfn = 2048,
                  kVocab = 32000, kLayers = 12;

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Sum of a buffer far larger than the caches, four accumulators: the
/// bandwidth one core gets for a plain stream (as folio-bench's probe),
/// with the widest vectors the host has.
__attribute__((target("avx512f"))) float readLoop512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) float readLoop256(const float *p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes,
                  _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  float s = 0;
  for (float v : lanes)
    s += v;
  return s;
}

float readLoop(const float *p, size_t n) {
  if (hostFeatures().avx512)
    return readLoop512(p, n);
  if (hostFeatures().avx2)
    return readLoop256(p, n);
  float a[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j)
      a[j] += p[i + j];
  float s = 0;
  for (float v : a)
    s += v;
  return s;
}

/// One round of the read loop over `buf` on the pool, one contiguous part
/// per thread; returns GB/s.
double readRound(const float *buf, size_t floats, ThreadPool &pool,
                 unsigned threads) {
  double t0 = seconds();
  std::vector<float> part(threads, 0.0f);
  size_t per = floats / threads / 64 * 64;
  pool.parallelFor(int64_t(threads), 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      size_t len = size_t(t) + 1 == threads ? floats - size_t(t) * per : per;
      part[size_t(t)] = readLoop(buf + size_t(t) * per, len);
    }
  });
  volatile float sink = part[0];
  (void)sink;
  return double(floats * sizeof(float)) / (seconds() - t0) / 1e9;
}

struct Free {
  void operator()(void *p) const { std::free(p); }
};

/// One token's weights in one arrangement.
struct Model {
  std::string name;
  std::vector<PackedWeight> weights;
  std::vector<std::unique_ptr<void, Free>> plain; // borrowed buffers
  size_t bytes = 0;
};

Model build(const std::string &name, bool stackGateUp, bool stackQkv,
            bool borrowPlain) {
  std::vector<int64_t> rows; // out features; K = hidden except for down
  std::vector<int64_t> ks;
  for (int64_t l = 0; l < kLayers; ++l) {
    auto add = [&](int64_t n, int64_t k) {
      rows.push_back(n);
      ks.push_back(k);
    };
    if (stackQkv) {
      add(kQ + 2 * kKv, kHidden);
    } else {
      add(kQ, kHidden);
      add(kKv, kHidden);
      add(kKv, kHidden);
    }
    add(kHidden, kQ);
    if (stackGateUp) {
      add(2 * kFfn, kHidden);
    } else {
      add(kFfn, kHidden);
      add(kFfn, kHidden);
    }
    add(kHidden, kFfn);
  }
  rows.push_back(kVocab);
  ks.push_back(kHidden);
  Model m;
  m.name = name;
  m.weights.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    size_t count = size_t(rows[i] * ks[i]);
    std::vector<uint16_t> w(count);
    for (size_t j = 0; j < count; ++j)
      w[j] = uint16_t(0x3c00 + j % 61); // small positive bf16 values
    Status s = Status::success();
    if (borrowPlain) {
      void *p = std::aligned_alloc(64, (count * 2 + 63) / 64 * 64);
      std::memcpy(p, w.data(), count * 2);
      m.plain.emplace_back(p);
      s = PackedWeight::pack(p, DType::BF16, rows[i], ks[i], nullptr,
                             DType::BF16, m.weights[i], /*borrow=*/true);
    } else {
      s = PackedWeight::pack(w.data(), DType::BF16, rows[i], ks[i], nullptr,
                             DType::BF16, m.weights[i]);
    }
    if (!s) {
      std::fprintf(stderr, "pack: %s\n", s.message().c_str());
      std::exit(1);
    }
    m.bytes += m.weights[i].weightBytes();
  }
  return m;
}

void decode(int rounds, unsigned threads) {
  std::vector<Model> models;
  models.push_back(
      build("separate gate/up, 4 KiB pages (before)", false, false, true));
  models.push_back(build("separate gate/up", false, false, false));
  models.push_back(build("stacked gate/up (now)", true, false, false));
  models.push_back(build("stacked gate/up + stacked qkv", true, true, false));
  ThreadPool pool(threads);
  std::vector<float> x(static_cast<size_t>(kFfn), 0.01f);
  std::vector<float> y(static_cast<size_t>(kVocab));
  size_t readFloats = size_t(1) << 28; // 1 GiB, beyond the 300 MiB L3
  auto *buf =
      static_cast<float *>(std::aligned_alloc(64, readFloats * sizeof(float)));
  std::memset(buf, 0, readFloats * sizeof(float));
  std::vector<double> read;
  std::vector<std::vector<double>> gbs(models.size()), ratio(models.size());
  for (int r = 0; r < rounds; ++r) {
    double bw = readRound(buf, readFloats, pool, threads);
    read.push_back(bw);
    for (size_t v = 0; v < models.size(); ++v) {
      double t0 = seconds();
      for (const PackedWeight &w : models[v].weights)
        if (!linearGemv(x.data(), 1, w, y.data(), pool))
          std::exit(1);
      double g = double(models[v].bytes) / (seconds() - t0) / 1e9;
      gbs[v].push_back(g);
      ratio[v].push_back(g / bw);
    }
  }
  std::free(buf);
  std::printf("decode (M = 1, bf16, %d rounds, %u threads): read loop median "
              "%.2f GB/s\n",
              rounds, threads, median(read));
  for (size_t v = 0; v < models.size(); ++v)
    std::printf("  %-44s %6.1f MB  %6.2f GB/s  %.3f of read loop\n",
                models[v].name.c_str(), double(models[v].bytes) / 1e6,
                median(gbs[v]), median(ratio[v]));
}

std::vector<PackedWeight> tokenWeights(DType storage, size_t &bytes,
                                       bool f32X = false,
                                       int64_t groupSize = 0);

void verify(int rounds, unsigned threads, DType storage,
            int64_t groupSize = 0) {
  Model model;
  if (storage == DType::BF16) {
    model = build("stacked gate/up", true, false, false);
  } else {
    size_t bytes = 0;
    model.weights = tokenWeights(storage, bytes, false, groupSize);
  }
  const std::vector<int64_t> ms = {1, 2,  3,  4,  5,  6,  7,
                                   8, 12, 16, 24, 32, 48, 64};
  ThreadPool pool(threads);
  setLibraryThreads(int(threads));
  std::vector<float> x(size_t(64 * kFfn), 0.01f);
  std::vector<float> y(size_t(64 * kVocab));
  auto run = [&](int64_t m, bool gemvOnly) {
    double t0 = seconds();
    for (const PackedWeight &w : model.weights)
      if (!(gemvOnly ? linearGemv(x.data(), m, w, y.data(), pool)
                     : linear(x.data(), m, w, y.data(), pool)))
        std::exit(1);
    return seconds() - t0;
  };
  std::vector<std::vector<double>> gemv(ms.size()), dispatched(ms.size()),
      seconds(ms.size());
  for (int r = 0; r < rounds; ++r) {
    double base = run(1, true);
    for (size_t i = 0; i < ms.size(); ++i) {
      gemv[i].push_back(run(ms[i], true) / base);
      seconds[i].push_back(run(ms[i], false));
      dispatched[i].push_back(seconds[i].back() / base);
    }
  }
  std::printf("verify (one token's linears at M rows, %s%s, %d rounds, %u "
              "threads; time / M = 1's GEMV in the same round, medians):\n",
              dtypeName(storage),
              groupSize ? (" g" + std::to_string(groupSize)).c_str() : "",
              rounds, threads);
  for (size_t i = 0; i < ms.size(); ++i)
    std::printf("  M = %2ld  GEMV %.2f  linear() %.2f (%.2f ms)\n", long(ms[i]),
                median(gemv[i]), median(dispatched[i]),
                median(seconds[i]) * 1e3);
}

void prefill(int rounds, unsigned threads) {
  // Weight dtypes through linear(): bf16 on oneDNN, and the 8-bit weights on
  // Folio's AMX GEMM and on its AVX-512 panel GEMM (FOLIO_CPU_AMX=0's path).
  // int4 with f32 x (--int4-activations f32, groups of 128), then with
  // int8 x (folioc's default) in each group size.
  struct Variant {
    std::string name;
    DType storage;
    bool amx;
    int64_t group = 0;
    bool int8X = false;
  };
  // FOLIO_CPU_AMX=0 (or a lower FOLIO_CPU_ISA) leaves the AMX variants out.
  const bool amx = amxActive();
  std::vector<Variant> variants = {{"bf16", DType::BF16, amx},
                                   {"f16", DType::F16, amx}};
  auto addBoth = [&](const std::string &name, DType t, int64_t group,
                     bool int8X) {
    if (amx)
      variants.push_back({name, t, true, group, int8X});
    variants.push_back(
        {amx ? name + " (no AMX)" : name, t, false, group, int8X});
  };
  addBoth("int8", DType::I8, 0, false);
  addBoth("fp8", DType::FP8E4M3, 0, false);
  addBoth("int4 f32x", DType::I4, 128, false);
  for (int64_t g : {128, 64, 32})
    addBoth("int4 g" + std::to_string(g), DType::I4, g, true);
  struct Case {
    const char *name;
    int64_t n, k;
    std::vector<PackedWeight> w;             // per variant
    std::vector<WeightPacking> packings;     // what w borrows
    std::vector<std::vector<double>> gflops; // per variant, per round
  };
  std::vector<Case> cases;
  cases.push_back({"q / o (768 x 768)", kQ, kHidden, {}, {}, {}});
  cases.push_back({"k / v (256 x 768)", kKv, kHidden, {}, {}, {}});
  cases.push_back(
      {"qkv stacked (1280 x 768)", kQ + 2 * kKv, kHidden, {}, {}, {}});
  cases.push_back({"gate / up (2048 x 768)", kFfn, kHidden, {}, {}, {}});
  cases.push_back(
      {"gate/up stacked (4096 x 768)", 2 * kFfn, kHidden, {}, {}, {}});
  cases.push_back({"down (768 x 2048)", kHidden, kFfn, {}, {}, {}});
  const int64_t m = 512;
  for (Case &c : cases) {
    std::vector<float> w(size_t(c.n * c.k));
    for (size_t j = 0; j < w.size(); ++j)
      w[j] = float(j % 61) / 61.0f - 0.5f;
    c.w.resize(variants.size());
    c.packings.resize(variants.size());
    c.gflops.resize(variants.size());
    for (size_t v = 0; v < variants.size(); ++v) {
      Status s = packWeightRows(w.data(), c.n, c.k, variants[v].storage,
                                c.packings[v], variants[v].group);
      WeightView view = c.packings[v].view();
      view.int8X = variants[v].int8X;
      if (s)
        s = PackedWeight::fromView(view, nullptr, c.w[v]);
      if (!s) {
        std::fprintf(stderr, "pack: %s\n", s.message().c_str());
        std::exit(1);
      }
    }
  }
  std::vector<float> x(size_t(m * kFfn), 0.25f), y(size_t(m * 2 * kFfn));
  ThreadPool pool(threads);
  setLibraryThreads(int(threads));
  // Null without oneDNN: then only GFLOP/s are printed.
  auto probe = folio::bench::GemmProbe::create(2048, true, int(threads));
  std::vector<double> peak;
  for (int r = 0; r < rounds; ++r) {
    if (probe)
      peak.push_back(probe->sample() / 1e9);
    for (Case &c : cases)
      for (size_t v = 0; v < variants.size(); ++v) {
        setAmxAllowed(variants[v].amx);
        double t0 = seconds();
        if (!linear(x.data(), m, c.w[v], y.data(), pool))
          std::exit(1);
        c.gflops[v].push_back(2.0 * double(m * c.n * c.k) / (seconds() - t0) /
                              1e9);
      }
    setAmxAllowed(amx);
  }
  std::printf("prefill (M = %ld, %d rounds, %u threads, median GFLOP/s)",
              long(m), rounds, threads);
  if (probe)
    std::printf(": square 2048 bf16 GEMM median %.0f GFLOP/s (range %.0f-%.0f)",
                median(peak), *std::min_element(peak.begin(), peak.end()),
                *std::max_element(peak.begin(), peak.end()));
  std::printf("\n  %-30s", "shape");
  for (const Variant &v : variants)
    std::printf(" %19s", v.name.c_str());
  std::printf("%s\n", probe ? "  bf16 / probe" : "");
  for (Case &c : cases) {
    std::printf("  %-30s", c.name);
    for (size_t v = 0; v < variants.size(); ++v)
      std::printf(" %19.0f", median(c.gflops[v]));
    if (probe) {
      std::vector<double> ratio;
      for (size_t r = 0; r < peak.size(); ++r)
        ratio.push_back(c.gflops[0][r] / peak[r]);
      std::printf("  %.2f", median(ratio));
    }
    std::printf("\n");
  }
}

/// One token's linears (stacked gate/up, as plans store them) packed as
/// `storage` from deterministic pseudo-random f32 weights in [-0.5, 0.5);
/// int4 ones allow int8 x (as folioc --weight-dtype int4 stores them)
/// unless `f32X`.
std::vector<PackedWeight> tokenWeights(DType storage, size_t &bytes, bool f32X,
                                       int64_t groupSize) {
  std::vector<std::pair<int64_t, int64_t>> shapes; // (n, k)
  for (int64_t l = 0; l < kLayers; ++l) {
    shapes.push_back({kQ, kHidden});
    shapes.push_back({kKv, kHidden});
    shapes.push_back({kKv, kHidden});
    shapes.push_back({kHidden, kQ});
    shapes.push_back({2 * kFfn, kHidden});
    shapes.push_back({kHidden, kFfn});
  }
  shapes.push_back({kVocab, kHidden});
  std::vector<PackedWeight> out(shapes.size());
  std::vector<WeightPacking> packings(shapes.size());
  bytes = 0;
  uint32_t state = 12345;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto [n, k] = shapes[i];
    std::vector<float> w(size_t(n * k));
    for (float &v : w) {
      state = state * 1664525u + 1013904223u;
      v = float(state >> 8) / float(1u << 24) - 0.5f;
    }
    Status s = packWeightRows(w.data(), n, k, storage, packings[i],
                              storage == DType::I4 ? groupSize : 0);
    WeightView view = packings[i].view();
    view.int8X = storage == DType::I4 && !f32X;
    if (s)
      s = PackedWeight::fromView(view, nullptr, out[i]);
    if (!s) {
      std::fprintf(stderr, "pack: %s\n", s.message().c_str());
      std::exit(1);
    }
    bytes += weightViewBytes(out[i].view());
  }
  // fromView borrows: keep the packed bytes alive with the weights.
  static std::vector<std::vector<WeightPacking>> keep;
  keep.push_back(std::move(packings));
  return out;
}

/// Every weight dtype under every instruction-set level this host runs,
/// timed in the same rounds: M = 1 (decode) and M = 4 (a verify step or
/// small batch) through the GEMV, M = 16 through linear() (batched decode:
/// oneDNN for f32/bf16, the quantized kernels' panels). JSON on stdout.
void isaCompare(int rounds, unsigned threads) {
  struct Dtype {
    const char *name;
    DType storage;
    bool f32X = false; // int4 with f32 x (folioc --int4-activations=f32)
  };
  const std::vector<Dtype> dtypes = {
      {"f32", DType::F32},           {"bf16", DType::BF16},
      {"f16", DType::F16},           {"int8", DType::I8},
      {"fp8_e4m3", DType::FP8E4M3},  {"int4", DType::I4},
      {"int4_f32x", DType::I4, true}};
  std::vector<Isa> isas = {Isa::Scalar};
  if (hostFeatures().avx2)
    isas.push_back(Isa::Avx2);
  if (hostFeatures().avx512)
    isas.push_back(Isa::Avx512);
  const std::vector<int64_t> ms = {1, 4, 16};
  std::vector<std::vector<PackedWeight>> weights;
  std::vector<size_t> bytes(dtypes.size());
  for (size_t d = 0; d < dtypes.size(); ++d)
    weights.push_back(
        tokenWeights(dtypes[d].storage, bytes[d], dtypes[d].f32X));
  ThreadPool pool(threads);
  setLibraryThreads(int(threads));
  std::vector<float> x(size_t(16 * kFfn), 0.01f), y(size_t(16 * kVocab));
  size_t readFloats = size_t(1) << 28;
  auto *buf =
      static_cast<float *>(std::aligned_alloc(64, readFloats * sizeof(float)));
  std::memset(buf, 0, readFloats * sizeof(float));
  // [dtype][isa][m] seconds per round; read-loop GB/s per round.
  std::vector<std::vector<std::vector<std::vector<double>>>> t(
      dtypes.size(),
      std::vector<std::vector<std::vector<double>>>(
          isas.size(), std::vector<std::vector<double>>(ms.size())));
  std::vector<double> read;
  for (int r = 0; r < rounds; ++r) {
    read.push_back(readRound(buf, readFloats, pool, threads));
    for (size_t d = 0; d < dtypes.size(); ++d)
      for (size_t i = 0; i < isas.size(); ++i) {
        setIsaLimit(isas[i]);
        for (size_t mi = 0; mi < ms.size(); ++mi) {
          double t0 = seconds();
          for (const PackedWeight &w : weights[d])
            if (!(ms[mi] > kSmallM
                      ? linear(x.data(), ms[mi], w, y.data(), pool)
                      : linearGemv(x.data(), ms[mi], w, y.data(), pool)))
              std::exit(1);
          t[d][i][mi].push_back(seconds() - t0);
        }
      }
  }
  setIsaLimit(Isa::Avx512);
  std::free(buf);
  std::printf("{\"mode\": \"isa\", \"rounds\": %d, \"threads\": %u, "
              "\"read_loop_gb_per_s\": %.3f, \"results\": [\n",
              rounds, threads, median(read));
  bool first = true;
  for (size_t d = 0; d < dtypes.size(); ++d)
    for (size_t i = 0; i < isas.size(); ++i) {
      std::vector<double> ratio, speedup;
      for (int r = 0; r < rounds; ++r) {
        double gbs = double(bytes[d]) / t[d][i][0][size_t(r)] / 1e9;
        ratio.push_back(gbs / read[size_t(r)]);
        speedup.push_back(t[d][0][0][size_t(r)] / t[d][i][0][size_t(r)]);
      }
      std::printf("%s  {\"dtype\": \"%s\", \"isa\": \"%s\", "
                  "\"weight_bytes\": %zu, \"m1_ms\": %.3f, "
                  "\"m1_gb_per_s\": %.3f, \"m1_of_read_loop\": %.3f, "
                  "\"m1_speedup_vs_scalar\": %.2f, \"m4_ms\": %.3f, "
                  "\"m16_ms\": %.3f}",
                  first ? "" : ",\n", dtypes[d].name, isaName(isas[i]),
                  bytes[d], median(t[d][i][0]) * 1e3,
                  double(bytes[d]) / median(t[d][i][0]) / 1e9, median(ratio),
                  median(speedup), median(t[d][i][1]) * 1e3,
                  median(t[d][i][2]) * 1e3);
      first = false;
    }
  std::printf("\n]}\n");
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  std::string what = argc > 3 ? argv[3] : "both";
  if (rounds < 1 || threads < 1 ||
      (what != "both" && what != "decode" && what != "verify" &&
       what != "prefill" && what != "isa")) {
    std::fprintf(stderr, "usage: folio-linear-bench [rounds>=1] [threads>=1] "
                         "[decode|verify|prefill|both|isa]\n");
    return 2;
  }
  if (what == "isa") {
    isaCompare(rounds, unsigned(threads));
    return 0;
  }
  if (what == "verify") {
    verify(rounds, unsigned(threads), DType::BF16);
    verify(rounds, unsigned(threads), DType::F16);
    verify(rounds, unsigned(threads), DType::I8);
    verify(rounds, unsigned(threads), DType::FP8E4M3);
    verify(rounds, unsigned(threads), DType::I4);
    verify(rounds, unsigned(threads), DType::I4, 64);
    verify(rounds, unsigned(threads), DType::I4, 32);
    return 0;
  }
  if (what != "prefill")
    decode(rounds, unsigned(threads));
  if (what != "decode")
    prefill(rounds, unsigned(threads));
  return 0;
}
