//===- TestVariants.h - The kernel variants the CUDA tests cover -*- C++
//-*-===//
//
// One list for the generator of the emulated test kernels, the emulation
// tests and the NVRTC tests: every cache type, GQA and MHA, head dims that
// are and are not multiples of 32, groups smaller and larger than a warp.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_TESTVARIANTS_H
#define FOLIO_TEST_UNITTESTS_CUDA_TESTVARIANTS_H

#include "codegen/CUDA/KernelSpec.h"

#include <vector>

namespace folio::cuda::test {

inline std::vector<KVWriteSpec> kvWriteVariants() {
  using cpu::DType;
  return {
      {DType::F32, 64, 2, 0},     {DType::BF16, 64, 2, 0},
      {DType::F16, 80, 2, 0},     {DType::FP8E4M3, 64, 2, 0},
      {DType::FP8E5M2, 64, 2, 0}, {DType::I8, 64, 2, 64},
      {DType::I8, 80, 1, 16},     {DType::I4, 64, 2, 32},
      {DType::I4, 80, 2, 80},
  };
}

inline std::vector<PagedDecodeSpec> pagedDecodeVariants() {
  using cpu::DType;
  // cache, head_dim, block, kv heads, q per kv, group, partition, threads
  return {
      {DType::F32, 64, 16, 2, 2, 0, 64, 64},
      {DType::BF16, 64, 16, 2, 2, 0, 64, 64},
      {DType::F16, 80, 8, 1, 1, 0, 32, 128},
      {DType::FP8E4M3, 64, 16, 2, 2, 0, 64, 64},
      {DType::FP8E5M2, 64, 16, 1, 4, 0, 64, 64},
      {DType::I8, 64, 16, 2, 2, 64, 64, 64},
      {DType::I4, 64, 16, 2, 2, 32, 64, 64},
      {DType::I4, 80, 8, 1, 4, 16, 48, 96},
      // Rows of several chunks per lane; 16 query heads (narrower chunks);
      // int4 groups smaller than a chunk.
      {DType::F32, 256, 16, 1, 2, 0, 64, 128},
      {DType::BF16, 64, 16, 1, 16, 0, 64, 128},
      {DType::I4, 64, 16, 1, 2, 4, 64, 64},
      // The bf16 variant with other threads and partition, as the GPU
      // bench's tuning alternatives are.
      {DType::BF16, 64, 16, 2, 2, 0, 32, 128},
  };
}

inline std::vector<PagedPrefillSpec> pagedPrefillVariants() {
  using cpu::DType;
  // cache, head_dim, block, kv heads, q per kv, group, query tile, key tile,
  // threads, tensor cores: key tiles below, at and above the block size,
  // and one that is not a multiple of it.
  return {
      {DType::F32, 64, 16, 2, 2, 0, 8, 16, 64},
      {DType::BF16, 64, 16, 2, 2, 0, 4, 32, 128},
      {DType::F16, 80, 8, 1, 1, 0, 16, 8, 96},
      {DType::FP8E4M3, 64, 16, 2, 2, 0, 8, 16, 64},
      {DType::FP8E5M2, 64, 16, 1, 4, 0, 4, 16, 128},
      {DType::I8, 64, 16, 2, 2, 64, 8, 16, 64},
      {DType::I4, 64, 16, 2, 2, 32, 8, 16, 64},
      {DType::I4, 80, 8, 1, 4, 16, 2, 24, 96},
      // Rows (9) and keys (10) that do not fill the last 4 x 4 score and
      // 4 x 8 output register tiles; head_dim 48.
      {DType::BF16, 48, 8, 1, 3, 0, 3, 10, 64},
      // Tensor cores (one warp per 16 rows): every cache type; four full
      // warps at head_dim 128; 8 and 1 padding rows (a warp of 8 rows, 5
      // tokens x 3 heads); a second warp with 4 rows; head_dim 48; key
      // tiles below, at and above the block size.
      {DType::F32, 64, 16, 2, 2, 0, 8, 16, 32, true},
      {DType::BF16, 128, 16, 1, 4, 0, 16, 32, 128, true},
      {DType::F16, 48, 8, 1, 1, 0, 20, 16, 64, true},
      {DType::FP8E4M3, 64, 16, 2, 2, 0, 8, 16, 32, true},
      {DType::FP8E5M2, 64, 16, 1, 4, 0, 4, 32, 32, true},
      {DType::I8, 64, 16, 2, 2, 64, 4, 32, 32, true},
      {DType::I4, 64, 8, 1, 3, 32, 5, 16, 32, true},
  };
}

/// Builds a row program op by op; each call returns the value's index.
struct RowBuilder {
  RowKernelSpec spec;
  RowBuilder(const char *label, int dim, int threads) {
    spec.label = label;
    spec.dim = dim;
    spec.threads = threads;
  }
  int push(RowOp op) {
    spec.ops.push_back(op);
    return int(spec.ops.size()) - 1;
  }
  int input(RowInputKind kind) {
    spec.inputs.push_back(kind);
    RowOp op;
    op.kind = RowOpKind::Input;
    op.index = int(spec.inputs.size()) - 1;
    return push(op);
  }
  int constant(double v) {
    RowOp op;
    op.kind = RowOpKind::Constant;
    op.value = v;
    return push(op);
  }
  int unary(const char *fn, int a) {
    RowOp op;
    op.kind = RowOpKind::Unary;
    op.fn = fn;
    op.a = a;
    return push(op);
  }
  int binary(const char *fn, int a, int b) {
    RowOp op;
    op.kind = RowOpKind::Binary;
    op.fn = fn;
    op.a = a;
    op.b = b;
    return push(op);
  }
  int rmsNorm(int x, int w, double eps, double offset = 0.0) {
    RowOp op;
    op.kind = RowOpKind::RmsNorm;
    op.a = x;
    op.b = w;
    op.value = eps;
    op.weightOffset = offset;
    return push(op);
  }
  int layerNorm(int x, int w, int b, double eps) {
    RowOp op;
    op.kind = RowOpKind::LayerNorm;
    op.a = x;
    op.b = w;
    op.c = b;
    op.value = eps;
    return push(op);
  }
  void output(int a) {
    RowOp op;
    op.kind = RowOpKind::Output;
    op.a = a;
    op.index = spec.numOutputs++;
    push(op);
  }
};

/// The row programs the tests run; the label says which CPU kernel each
/// must match (RowEmulationTest.cpp). Dims that are and are not multiples
/// of the block, one to several elements per thread.
inline std::vector<RowKernelSpec> rowKernelVariants() {
  using K = RowInputKind;
  std::vector<RowKernelSpec> out;
  {
    RowBuilder b("add_rms_norm", 80, 32);
    int x = b.input(K::Row), r = b.input(K::Row), w = b.input(K::Vector);
    int sum = b.binary("add", x, r);
    b.output(sum);
    b.output(b.rmsNorm(sum, w, 1e-5));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("gemma_rms_norm", 200, 64);
    int x = b.input(K::Row), w = b.input(K::Vector);
    b.output(b.rmsNorm(x, w, 1e-6, 1.0));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("add_layer_norm", 64, 64);
    int x = b.input(K::Row), r = b.input(K::Row), w = b.input(K::Vector),
        bias = b.input(K::Vector);
    int sum = b.binary("add", x, r);
    b.output(sum);
    b.output(b.layerNorm(sum, w, bias, 1e-5));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("layer_norm_plain", 48, 32);
    b.output(b.layerNorm(b.input(K::Row), -1, -1, 1e-5));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("swiglu", 72, 32);
    int gate = b.input(K::Row), up = b.input(K::Row);
    b.output(b.binary("mul", b.unary("silu", gate), up));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("geglu_tanh", 40, 32);
    int gate = b.input(K::Row), up = b.input(K::Row);
    b.output(b.binary("mul", b.unary("gelu_tanh", gate), up));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("gelu_erf", 130, 64);
    b.output(b.unary("gelu_erf", b.input(K::Row)));
    out.push_back(b.spec);
  }
  {
    // GPT-2's gelu_new as the exporter writes it out.
    RowBuilder b("gelu_new_ops", 96, 32);
    int x = b.input(K::Row);
    int cube = b.binary("pow", x, b.constant(3.0));
    int inner = b.binary("add", x, b.binary("mul", b.constant(0.044715), cube));
    int t =
        b.unary("tanh", b.binary("mul", b.constant(0.7978845608028654), inner));
    int half = b.binary("mul", b.constant(0.5), x);
    b.output(b.binary("mul", half, b.binary("add", b.constant(1.0), t)));
    out.push_back(b.spec);
  }
  {
    RowBuilder b("soft_cap", 256, 128);
    int x = b.input(K::Row), cap = b.constant(30.0);
    b.output(b.binary("mul", b.unary("tanh", b.binary("div", x, cap)), cap));
    out.push_back(b.spec);
  }
  {
    // A norm between two elementwise stages, a runtime scalar.
    RowBuilder b("norm_scale_bias", 100, 32);
    int x = b.input(K::Row), w = b.input(K::Vector), s = b.input(K::Scalar),
        bias = b.input(K::Vector);
    int n = b.rmsNorm(b.unary("relu", x), w, 1e-5);
    b.output(b.binary("add", b.binary("mul", n, s), bias));
    out.push_back(b.spec);
  }
  return out;
}

inline std::vector<RotarySpec> rotaryVariants() {
  // head_dim, rotary_dim, interleaved, heads
  return {{64, 64, false, 3}, {16, 8, true, 2}, {16, 4, false, 2}};
}

inline std::vector<GatherSpec> gatherVariants() {
  using cpu::DType;
  // embedding, table, dim, threads, int4 group. The packed tables (a tied
  // lm_head's int8, fp8_e4m3 and int4 rows) cover int8 outlier columns,
  // int4 blocks cut short (dim % 128) and each group size.
  return {{true, DType::F32, 40, 32},     {true, DType::BF16, 40, 32},
          {true, DType::F16, 70, 64},     {false, DType::F32, 300, 128},
          {true, DType::I8, 200, 64},     {true, DType::FP8E4M3, 70, 32},
          {true, DType::I4, 200, 64, 32}, {true, DType::I4, 256, 128, 128},
          {true, DType::I4, 300, 32, 64}};
}

inline std::vector<SampleSpec> sampleVariants() {
  using M = SampleMode;
  return {{M::Greedy, 64},   {M::Greedy, 256},  {M::Draw, 64},
          {M::Draw, 256},    {M::Verify, 64},   {M::Verify, 256},
          {M::Penalize, 64}, {M::Logprobs, 64}, {M::Logprobs, 256}};
}

/// Every weight type, rows that split into 16-byte chunks and rows that do
/// not, int4 with each group size and a last block cut short (k % 128),
/// also where x's rows are not float4-aligned (k % 4), one and several
/// rows per pass, one and several warps per block, one to four output rows
/// per warp.
inline std::vector<LinearSpec> linearVariants() {
  using cpu::DType;
  // weights, k, group, rows per pass, threads, outputs per warp (the
  // default 2 where not given; 1, 3 and 4 too, with n not a multiple)
  return {
      {DType::F32, 64, 0, 8, 128},
      {DType::F32, 37, 0, 4, 64, 1},
      {DType::BF16, 96, 0, 8, 128},
      {DType::BF16, 100, 0, 3, 32, 3},
      {DType::F16, 48, 0, 8, 128},
      {DType::F16, 45, 0, 2, 64, 4},
      {DType::I8, 160, 0, 8, 128},
      {DType::I8, 70, 0, 2, 64, 4},
      {DType::FP8E4M3, 64, 0, 8, 128},
      {DType::FP8E4M3, 50, 0, 5, 32, 1},
      {DType::I4, 256, 128, 8, 128},
      {DType::I4, 200, 64, 4, 64, 3},
      {DType::I4, 98, 32, 8, 128, 1},
      {DType::I4, 300, 32, 1, 32, 4},
      // Two of the above with other launch parameters only, as the GPU
      // bench's tuning alternatives are.
      {DType::I8, 160, 0, 8, 128, 1},
      {DType::I4, 256, 128, 4, 64, 4},
  };
}

/// The linear kernel's dequantizing form (LinearSpec::dequantToBf16) for
/// every 8- and 4-bit weight type: rows of whole 16-byte chunks and rows
/// that are not, int4 with each group size and a last block cut short,
/// more threads than k and fewer.
inline std::vector<LinearSpec> dequantVariants() {
  using cpu::DType;
  // weights, k, group, rows per pass, threads, outputs per warp, dequant
  return {
      {DType::I8, 160, 0, 8, 64, 2, true},
      {DType::I8, 70, 0, 8, 256, 2, true},
      {DType::FP8E4M3, 64, 0, 8, 256, 2, true},
      {DType::FP8E4M3, 50, 0, 8, 32, 2, true},
      {DType::I4, 256, 128, 8, 256, 2, true},
      {DType::I4, 200, 64, 8, 64, 2, true},
      {DType::I4, 98, 32, 8, 128, 2, true},
  };
}

/// The linear kernel's quantizing form (LinearSpec::quantizeXToFp8): more
/// threads than k, several warps over a k that is not a multiple of them,
/// one warp.
inline std::vector<LinearSpec> quantizeXVariants() {
  using cpu::DType;
  // weights, k, group, rows per pass, threads, outputs per warp, dequant,
  // quantize x
  return {
      {DType::FP8E4M3, 64, 0, 8, 256, 2, false, true},
      {DType::FP8E4M3, 1000, 0, 8, 96, 2, false, true},
      {DType::FP8E4M3, 48, 0, 8, 32, 2, false, true},
  };
}

/// The generated linear kernels that take LinearArgs without computing a
/// product: dequantVariants() and quantizeXVariants().
inline std::vector<LinearSpec> linearFormVariants() {
  std::vector<LinearSpec> out = dequantVariants();
  for (const LinearSpec &s : quantizeXVariants())
    out.push_back(s);
  return out;
}

/// Every cast the CPU executor makes: within integers, within floats.
inline std::vector<CastSpec> castVariants() {
  return {{CastType::I32, CastType::I64, 256},
          {CastType::I64, CastType::I32, 64},
          {CastType::F32, CastType::BF16, 256},
          {CastType::BF16, CastType::F32, 256},
          {CastType::F32, CastType::F16, 128},
          {CastType::F16, CastType::F32, 256},
          {CastType::F16, CastType::BF16, 256}};
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_TESTVARIANTS_H
