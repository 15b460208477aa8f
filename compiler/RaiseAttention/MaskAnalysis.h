//===- MaskAnalysis.h - Attention masks recognised by meaning ----*- C++
//-*-===//
//
// The mask an attention adds to (or selects on) its scores is evaluated on a
// few concrete (batch, past, sequence) configurations, with every token
// real and with left padding, and compared with causal attention, a sliding
// window and key padding from attention_mask. Whatever idiom computed it
// (Trilu, Range/LessOrEqual, Where with -inf or finfo.min, boolean or
// additive), only the result counts.
//
// Evaluation proves the classification only for the lengths evaluated: a
// window wider than every evaluated key length looks causal, and a mask
// built from a fixed-size buffer cannot be evaluated past it. So each class
// carries the longest key length it was verified on, and the raise pass
// records the shortest of them as the context the model may be served up to.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_MASKANALYSIS_H
#define FOLIO_RAISEATTENTION_MASKANALYSIS_H

#include "compiler/RaiseAttention/RaiseUtils.h"

#include "llvm/ADT/DenseMap.h"

#include <string>
#include <tuple>

namespace mlir::folio {

/// i64 on the raised function: the shortest context any of its attention
/// masks was proven for (absent when every one holds at any length). The
/// plan's `max_context` config entry.
inline constexpr llvm::StringLiteral kMaxContextAttrName = "folio.max_context";

/// How the mask acts on the scores.
enum class MaskForm {
  /// No mask: every key is visible.
  None,
  /// Added to the scores: 0 keeps, a large negative value hides.
  Additive,
  /// Where(mask, scores, -inf): true keeps.
  KeepIfTrue,
  /// Where(mask, -inf, scores): true hides.
  KeepIfFalse,
};

struct MaskClass {
  bool causal = true;
  /// 0: no window; else a query sees the keys q - window < k <= q.
  int64_t window = 0;
  /// Keys where attention_mask is 0 are hidden.
  bool keyPadding = false;
  /// The longest key length (past + new tokens) the class was verified on;
  /// beyond it nothing is known. 0: the class holds at any length (no mask
  /// was evaluated, e.g. is_causal alone or a fused op's own attributes).
  int64_t provenContext = 0;
  /// Set when the graph's mask has no value for several new tokens over a
  /// past (shapes that do not broadcast: a graph written for prefill
  /// without past and one-token decode): the class was proven on those two
  /// and is served for chunked prefill too. Says where the graph failed.
  std::string undefinedMixed;
};

class MaskAnalysis {
public:
  MaskAnalysis(func::FuncOp func, ONNXShapeInference &inference);

  /// Classifies `mask` (null for MaskForm::None), also applying causality
  /// when `alsoCausal` (fused ops' is_causal). Query and key lengths are dim
  /// `queryAxis` of `query` and `keyAxis` of `key`. Fails with `error` set.
  FailureOr<MaskClass> classify(Value mask, MaskForm form, bool alsoCausal,
                                Value query, int64_t queryAxis, Value key,
                                int64_t keyAxis, std::string &error);

  const GraphInputs &getInputs() const { return inputs; }

  /// The shortest provenContext of the masks classified so far; 0 when
  /// every one holds at any length.
  int64_t getProvenContext() const { return provenContext; }

private:
  ONNXShapeInference &inference;
  GraphInputs inputs;
  int64_t provenContext = 0;
  llvm::DenseMap<std::tuple<Value, unsigned, unsigned>, MaskClass> cache;
};

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_MASKANALYSIS_H
