//===- Passes.td - folio passes ----------------------------*- tablegen -*-===//

#ifndef FOLIO_TRANSFORMS_PASSES_TD
#define FOLIO_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FolioSetTargetPass : Pass<"folio-set-target", "::mlir::ModuleOp"> {
  let summary = "Records the compile target, KV-cache dtype and block size "
                "on the module";
  let description = [{
    Resolves the user's `target`, `kv-cache-dtype` (with `auto` becoming
    fp8_e4m3 on sm_89/sm_90a and int8 elsewhere) and `block-size` once, and
    stores them as the module attributes `folio.target`,
    `folio.kv_cache_dtype` and `folio.block_size`, which every later pass
    reads. Target selection is an explicit pass rather than a side effect of
    the tool, so `folio-opt` reproduces what `folioc` does.

    Unknown names, invalid block sizes, and a module already configured
    differently are errors.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Compile target: cpu, sm_80, sm_86, sm_89, sm_90a">,
    Option<"kvCacheDtype", "kv-cache-dtype", "std::string",
           /*default=*/"\"auto\"",
           "KV-cache dtype: auto, f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, "
           "int4, int2">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"16",
           "KV-cache block size in tokens: a power of two from 1 to 256">,
  ];
}

def FolioONNXSimplifyPass : Pass<"folio-onnx-simplify", "::mlir::func::FuncOp"> {
  let summary = "Folds shape subgraphs and removes no-op ONNX nodes";
  let description = [{
    Runs symbolic shape inference over an imported function, then:
    replaces every `folio.onnx_node` whose results are fully known (shape
    arithmetic, constants, the 1/sqrt(d) scale) by `arith.constant`;
    forwards nodes that do nothing for the inferred shapes (Identity, Cast to
    the same type, Reshape/Expand/Squeeze/Unsqueeze to the same dims, an
    identity Transpose, a single-input Concat); refines result types to the
    inferred ones; and erases what is left unused. Raising then sees the
    computation without the exporters' shape bookkeeping.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // FOLIO_TRANSFORMS_PASSES_TD
