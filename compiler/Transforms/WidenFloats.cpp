//===- WidenFloats.cpp - Compute a 16-bit graph's values in f32 -----------===//

#include "compiler/ONNXOps/InferHelpers.h"
#include "compiler/ONNXOps/Match.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/IR/ConstantData.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

#define DEBUG_TYPE "folio-widen-floats"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOWIDENFLOATSPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

/// ONNX TensorProto's number for float.
constexpr int64_t kOnnxFloat = 1;
/// Constants up to this many elements stay inline (shapes, scalars);
/// larger ones (weights) become resource blobs, as the importer makes them.
constexpr int64_t kInlineElements = 64;

bool isNarrowFloat(Type type) { return type.isF16() || type.isBF16(); }

/// `type` with f16/bf16 elements as f32; null if it has none to widen.
Type widened(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && isNarrowFloat(tensor.getElementType()))
    return tensor.clone(Float32Type::get(type.getContext()));
  if (isNarrowFloat(type))
    return Float32Type::get(type.getContext());
  return {};
}

class Widener {
public:
  explicit Widener(ModuleOp module) : module(module) {}

  LogicalResult run();

private:
  /// Records the narrow type seen at `loc`; fails once f16 and bf16 mix.
  LogicalResult note(Type element, Location loc);
  /// `type` widened (noting its narrow element type), or `type` itself.
  FailureOr<Type> widenType(Type type, Location loc);
  FailureOr<Attribute> widenAttribute(Attribute attr, StringRef name,
                                      Location loc);
  FailureOr<ElementsAttr> widenElements(ElementsAttr attr, Location loc);

  ModuleOp module;
  Type source;
};

LogicalResult Widener::note(Type element, Location loc) {
  if (!source) {
    source = element;
    return success();
  }
  if (source == element)
    return success();
  return emitError(loc) << "the graph mixes f16 and bf16 values; Folio "
                           "computes a 16-bit graph in f32 from one of them";
}

FailureOr<Type> Widener::widenType(Type type, Location loc) {
  Type wide = widened(type);
  if (!wide)
    return type;
  if (failed(note(getElementTypeOrSelf(type), loc)))
    return failure();
  return wide;
}

FailureOr<ElementsAttr> Widener::widenElements(ElementsAttr attr,
                                               Location loc) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !isNarrowFloat(type.getElementType()))
    return attr;
  if (failed(note(type.getElementType(), loc)))
    return failure();
  std::optional<std::vector<float>> values = readFloatElements(attr);
  if (!values)
    return emitError(loc) << "a " << type
                          << " constant holds no readable data to widen";
  auto wide = cast<RankedTensorType>(widened(type));
  if (type.getNumElements() <= kInlineElements)
    return ElementsAttr(DenseElementsAttr::get(wide, ArrayRef(*values)));
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(values->size() * sizeof(float), 64);
  std::memcpy(blob.getMutableData().data(), values->data(),
              values->size() * sizeof(float));
  std::string key = "widened";
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    key = resource.getRawHandle().getKey().str();
  return ElementsAttr(
      DenseResourceElementsAttr::get(wide, resourceKey(key), std::move(blob)));
}

FailureOr<Attribute> Widener::widenAttribute(Attribute attr, StringRef name,
                                             Location loc) {
  if (auto elements = dyn_cast<ElementsAttr>(attr)) {
    FailureOr<ElementsAttr> wide = widenElements(elements, loc);
    if (failed(wide))
      return failure();
    return Attribute(*wide);
  }
  // The attributes that name a tensor type by its ONNX number.
  if (auto integer = dyn_cast<IntegerAttr>(attr);
      integer && (name == "to" || name == "dtype" || name == "output_dtype")) {
    Type named =
        infer::elementTypeFromONNX(attr.getContext(), integer.getInt());
    if (named && isNarrowFloat(named)) {
      if (failed(note(named, loc)))
        return failure();
      return Attribute(IntegerAttr::get(integer.getType(), kOnnxFloat));
    }
  }
  return attr;
}

LogicalResult Widener::run() {
  WalkResult walked = module.walk([&](Operation *op) -> WalkResult {
    Location loc = op->getLoc();
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      SmallVector<Type> inputs, results;
      for (auto [types, out] : {std::pair(func.getArgumentTypes(), &inputs),
                                std::pair(func.getResultTypes(), &results)})
        for (Type t : types) {
          FailureOr<Type> wide = widenType(t, loc);
          if (failed(wide))
            return WalkResult::interrupt();
          out->push_back(*wide);
        }
      func.setType(FunctionType::get(op->getContext(), inputs, results));
      if (!func.isExternal())
        for (auto [arg, t] : llvm::zip(func.getArguments(), inputs))
          arg.setType(t);
      return WalkResult::advance();
    }
    for (Value result : op->getResults()) {
      FailureOr<Type> wide = widenType(result.getType(), loc);
      if (failed(wide))
        return WalkResult::interrupt();
      result.setType(*wide);
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto elements = dyn_cast<ElementsAttr>(constant.getValue());
      if (!elements)
        return WalkResult::advance();
      FailureOr<ElementsAttr> wide = widenElements(elements, loc);
      if (failed(wide))
        return WalkResult::interrupt();
      op->setAttr("value", *wide);
      return WalkResult::advance();
    }
    if (auto node = dyn_cast<ONNXNodeOp>(op)) {
      SmallVector<NamedAttribute> attrs;
      for (NamedAttribute a : node.getOnnxAttributes()) {
        FailureOr<Attribute> wide =
            widenAttribute(a.getValue(), a.getName().getValue(), loc);
        if (failed(wide))
          return WalkResult::interrupt();
        attrs.emplace_back(a.getName(), *wide);
      }
      node.setOnnxAttributesAttr(DictionaryAttr::get(op->getContext(), attrs));
    }
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  if (source)
    module->setAttr(
        kSourceFloatAttrName,
        StringAttr::get(module.getContext(), source.isF16() ? "f16" : "bf16"));
  return success();
}

struct WidenFloatsPass
    : mlir::folio::impl::FolioWidenFloatsPassBase<WidenFloatsPass> {
  void runOnOperation() override {
    if (failed(Widener(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
