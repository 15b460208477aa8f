//===- FolioBase.td - The folio dialect and its enums ------*- tablegen -*-===//
//
// The dialect definition and every enum shared by its types and ops.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_BASE_TD
#define FOLIO_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaceBase.td"

def Folio_Dialect : Dialect {
  let name = "folio";
  let cppNamespace = "::mlir::folio";
  let summary = "Paged-attention, KV-cache and speculative-decoding ops for "
                "compiling decoder LLMs";
  let description = [{
    The `folio` dialect carries a decoder-only language model from its
    imported batch x sequence form to the ragged-token serving contract: one
    `forward` over all tokens scheduled this step, with per-layer paged KV
    caches (`!folio.kv_cache`) written by `folio.kv_write` and read by
    `folio.paged_attention`. Fused kernels are `folio.kernel` regions.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Defined beside the type storage classes, which must be complete there.
    void registerTypes();
  }];
}

/// Every op that reads or writes a paged KV cache declares its effect on this
/// resource, so that generic passes (CSE, DCE, hoisting) keep the order of
/// cache writes and reads without knowing the ops.
def Folio_KVCacheResource : Resource<"::mlir::folio::KVCacheResource">;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Folio_ScaleLayout : I32EnumAttr<"ScaleLayout",
    "where the quantization scales of a KV cache live", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"per_tensor", 1>,
      I32EnumAttrCase<"per_head", 2>,
      I32EnumAttrCase<"per_token_head", 3>,
      I32EnumAttrCase<"kivi", 4>,
      I32EnumAttrCase<"per_token_group", 5>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}

def Folio_WeightLayout : I32EnumAttr<"WeightLayout",
    "how a weight matrix is stored", [
      // [in, out]: ONNX MatMul's right-hand side (what torch exports).
      I32EnumAttrCase<"in_out", 0>,
      // [out, in]: PyTorch nn.Linear, ONNX Gemm with transB = 1.
      I32EnumAttrCase<"out_in", 1>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_WeightLayoutAttr : EnumAttr<Folio_Dialect, Folio_WeightLayout,
                                      "weight_layout"> {
  let assemblyFormat = "`<` $value `>`";
}

def Folio_RopeStyle : I32EnumAttr<"RopeStyle", "how rotary pairs are formed", [
      // Pairs (i, i + rotary_dim / 2): Llama, Mistral, Qwen2, NeoX, Phi.
      I32EnumAttrCase<"half_split", 0>,
      // Pairs (2i, 2i + 1): GPT-J.
      I32EnumAttrCase<"interleaved", 1>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_RopeStyleAttr : EnumAttr<Folio_Dialect, Folio_RopeStyle,
                                   "rope_style"> {
  let assemblyFormat = "`<` $value `>`";
}

def Folio_RopeScaling : I32EnumAttr<"RopeScaling",
    "how rotary frequencies are rescaled for long contexts", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"linear", 1>,
      I32EnumAttrCase<"llama3", 2>,
      I32EnumAttrCase<"yarn", 3>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_RopeScalingAttr : EnumAttr<Folio_Dialect, Folio_RopeScaling,
                                     "rope_scaling"> {
  let assemblyFormat = "`<` $value `>`";
}

def Folio_Activation : I32EnumAttr<"Activation", "a pointwise activation", [
      I32EnumAttrCase<"silu", 0>,
      I32EnumAttrCase<"gelu", 1>,
      I32EnumAttrCase<"gelu_tanh", 2>,
      I32EnumAttrCase<"relu", 3>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_ActivationAttr : EnumAttr<Folio_Dialect, Folio_Activation,
                                    "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Folio_SpecVerifyMode : I32EnumAttr<"SpecVerifyMode",
    "how speculative tokens are accepted", [
      // Accept the longest prefix equal to the target's argmax.
      I32EnumAttrCase<"greedy", 0>,
      // Leviathan/Chen rejection sampling: lossless for any temperature.
      I32EnumAttrCase<"sample", 1>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_SpecVerifyModeAttr : EnumAttr<Folio_Dialect, Folio_SpecVerifyMode,
                                        "spec_verify_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

def Folio_BinaryKind : I32EnumAttr<"BinaryKind",
    "an elementwise binary operation", [
      I32EnumAttrCase<"add", 0>,
      I32EnumAttrCase<"sub", 1>,
      I32EnumAttrCase<"mul", 2>,
      I32EnumAttrCase<"div", 3>,
      I32EnumAttrCase<"pow", 4>,
      I32EnumAttrCase<"max", 5>,
      I32EnumAttrCase<"min", 6>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_BinaryKindAttr : EnumAttr<Folio_Dialect, Folio_BinaryKind,
                                    "binary"> {
  let assemblyFormat = "`<` $value `>`";
}

def Folio_UnaryKind : I32EnumAttr<"UnaryKind",
    "an elementwise unary operation", [
      I32EnumAttrCase<"neg", 0>,
      I32EnumAttrCase<"exp", 1>,
      I32EnumAttrCase<"sqrt", 2>,
      I32EnumAttrCase<"tanh", 3>,
      I32EnumAttrCase<"erf", 4>,
      I32EnumAttrCase<"sigmoid", 5>,
      I32EnumAttrCase<"relu", 6>,
      I32EnumAttrCase<"abs", 7>,
      I32EnumAttrCase<"reciprocal", 8>
    ]> {
  let cppNamespace = "::mlir::folio";
  let genSpecializedAttr = 0;
}
def Folio_UnaryKindAttr : EnumAttr<Folio_Dialect, Folio_UnaryKind, "unary"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // FOLIO_BASE_TD
