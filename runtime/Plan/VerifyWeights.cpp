//===- VerifyWeights.cpp - The stored weights of a plan -------------------===//

#include "runtime/Plan/VerifyWeights.h"
#include "runtime/Plan/PlanIO.h"

#include <cstring>
#include <set>
#include <utility>
#include <vector>

namespace folio::plan {

namespace {

Status fail(size_t i, const StoredWeight &w, const std::string &why) {
  return Status::invalidArgument("plan: stored weight " + std::to_string(i) +
                                 " (step " + std::to_string(w.step) +
                                 ", operand " + std::to_string(w.operand) +
                                 "): " + why);
}

/// A byte range of the blob: aligned, inside it, exactly `want` bytes.
Status checkRange(size_t i, const StoredWeight &w, const Plan &plan,
                  const char *what, uint64_t offset, uint64_t bytes,
                  uint64_t want) {
  if (bytes != want)
    return fail(i, w,
                std::string(what) + " is " + std::to_string(bytes) +
                    " bytes; its dtype and shape need " + std::to_string(want));
  if (want == 0 && offset == 0)
    return Status::ok();
  if (offset % kBlobAlignment != 0)
    return fail(i, w,
                std::string(what) + " is at blob offset " +
                    std::to_string(offset) + ", not a multiple of " +
                    std::to_string(kBlobAlignment));
  if (offset > plan.blob.size() || bytes > plan.blob.size() - offset)
    return fail(i, w,
                std::string(what) + " (" + std::to_string(bytes) +
                    " bytes at offset " + std::to_string(offset) +
                    ") lies outside the blob of " +
                    std::to_string(plan.blob.size()) + " bytes");
  return Status::ok();
}

/// The scales of an int8 or fp8 weight (f32, one per row) and int4's f16
/// (scale, min) pairs are finite, and the scales not negative: a NaN or
/// inf would turn whole rows of every output into NaN.
Status checkScales(size_t i, const StoredWeight &w, const Plan &plan) {
  const uint8_t *p = plan.blob.data() + w.scalesOffset;
  if (w.type == ElemType::I4) {
    int64_t group = int4LayoutGroupSize(w.layout);
    int64_t groups = (w.k + group - 1) / group;
    for (uint64_t j = 0; j < w.scalesBytes / 2; ++j) {
      uint16_t h;
      std::memcpy(&h, p + j * 2, 2);
      bool finite = (h & 0x7c00u) != 0x7c00u;
      bool negativeScale = j % 2 == 0 && (h & 0x8000u) && (h & 0x7fffu);
      if (!finite || negativeScale)
        return fail(i, w,
                    std::string("the ") + (j % 2 ? "min" : "scale") +
                        " of int4 group " +
                        std::to_string(int64_t(j / 2) % groups) + " of row " +
                        std::to_string(int64_t(j / 2) / groups) + " is " +
                        (finite ? "negative" : "not finite") +
                        "; scales are finite and >= 0, mins finite");
    }
    return Status::ok();
  }
  for (uint64_t j = 0; j < w.scalesBytes / 4; ++j) {
    float f;
    std::memcpy(&f, p + j * 4, 4);
    if (!(f >= 0.0f && f <= 3.4028234663852886e38f))
      return fail(i, w,
                  "the scale of row " + std::to_string(j) + " is " +
                      std::to_string(f) + "; scales are finite and >= 0");
  }
  return Status::ok();
}

} // namespace

Status validateStoredWeights(const Plan &plan) {
  std::set<std::pair<int32_t, int32_t>> covered;
  std::vector<bool> isInput(plan.values.size(), false);
  for (const Argument &a : plan.inputs)
    if (a.value >= 0 && size_t(a.value) < plan.values.size())
      isInput[size_t(a.value)] = true;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const StoredWeight &w = plan.weights[i];
    if (w.step < 0 || size_t(w.step) >= plan.steps.size())
      return fail(i, w,
                  "names no step (forward has " +
                      std::to_string(plan.steps.size()) + ")");
    const Step &s = plan.steps[size_t(w.step)];
    bool fits =
        (s.kind == "linear" && w.operand == 1 && w.numOperands == 1) ||
        (s.kind == "gated_mlp" && ((w.operand == 1 && w.numOperands == 2) ||
                                   (w.operand == 3 && w.numOperands == 1))) ||
        (s.kind == "embedding" && w.operand == 0 && w.numOperands == 1);
    if (!fits)
      return fail(i, w,
                  "stands for " + std::to_string(w.numOperands) +
                      " operand(s) of a '" + s.kind +
                      "' step; stored weights are a linear's operand 1, a "
                      "gated_mlp's operands 1-2 (gate and up) or 3 (down), "
                      "or an embedding's table (operand 0)");
    if (s.operands.size() < size_t(w.operand + w.numOperands))
      return fail(i, w,
                  "the step has only " + std::to_string(s.operands.size()) +
                      " operands");
    std::string layout = s.getString("weight_layout", "in_out");
    if (layout != "in_out" && layout != "out_in")
      return fail(i, w,
                  "the step's weight_layout '" + layout +
                      "' is not a weight layout (in_out, out_in)");
    // A table is [rows, dim]: row `id` is W[id, :] (a tied lm_head's
    // packing read by the lookup).
    bool inOut = layout == "in_out" && s.kind != "embedding";
    int64_t n = 0, k = -1;
    for (int32_t j = 0; j < w.numOperands; ++j) {
      int32_t id = s.operands[size_t(w.operand + j)];
      if (!covered.insert({w.step, w.operand + j}).second)
        return fail(i, w,
                    "another stored weight stands for operand " +
                        std::to_string(w.operand + j) + " too");
      if (id < 0 || size_t(id) >= plan.values.size())
        return fail(i, w, "its operand names no value");
      if (isInput[size_t(id)])
        return fail(i, w,
                    "its operand, value " + std::to_string(id) +
                        ", is an input of the plan, not a weight");
      const ValueInfo &v = plan.values[size_t(id)];
      if (v.kind != ValueInfo::Kind::Tensor || v.dims.size() != 2 ||
          v.dims[0] <= 0 || v.dims[1] <= 0)
        return fail(i, w,
                    "its operand, value " + std::to_string(id) +
                        ", is not a static 2-D tensor");
      int64_t vk = inOut ? v.dims[0] : v.dims[1];
      if (k >= 0 && vk != k)
        return fail(i, w, "its stacked operands differ in input features");
      k = vk;
      n += inOut ? v.dims[1] : v.dims[0];
    }
    if (n != w.n || k != w.k)
      return fail(i, w,
                  "it is " + std::to_string(w.n) + " x " + std::to_string(w.k) +
                      " but its operands are " + std::to_string(n) + " x " +
                      std::to_string(k) + " (out x in features)");
    if (w.n > kMaxTensorElements / w.k)
      return fail(i, w, "it has more than 2^40 elements");
    if (w.type != ElemType::F32 && w.type != ElemType::BF16 &&
        w.type != ElemType::F16 && w.type != ElemType::I8 &&
        w.type != ElemType::F8E4M3 && w.type != ElemType::I4)
      return fail(i, w,
                  std::string("its dtype is ") +
                      (uint8_t(w.type) <= uint8_t(ElemType::I2)
                           ? elemTypeName(w.type)
                           : "unknown") +
                      "; stored weights are f32, bf16, f16, int8, fp8_e4m3 "
                      "or int4");
    bool int8 = w.type == ElemType::I8, fp8 = w.type == ElemType::F8E4M3;
    bool int4 = w.type == ElemType::I4;
    int64_t group = int4LayoutGroupSize(w.layout);
    if (int4 ? group == 0 : w.layout != WeightLayout::RowsNK)
      return fail(i, w,
                  std::string("its layout ") +
                      (group || w.layout == WeightLayout::RowsNK
                           ? weightLayoutName(w.layout)
                           : std::to_string(int(w.layout)).c_str()) +
                      " is not one this runtime reads for " +
                      elemTypeName(w.type) + " weights (" +
                      (int4 ? "int4_g32 = 2, int4_g64 = 3, int4_g128 = 4"
                            : "rows_nk = 1") +
                      ")");
    if (w.activations != ElemType::F32 &&
        !(int4 && w.activations == ElemType::I8))
      return fail(i, w,
                  std::string("its activations are ") +
                      (uint8_t(w.activations) <= uint8_t(ElemType::I2)
                           ? elemTypeName(w.activations)
                           : "unknown") +
                      "; stored weights take f32 activations, or int8 ones "
                      "for int4 weights");
    if (w.numOutliers < 0 || w.numOutliers > w.k || (!int8 && w.numOutliers))
      return fail(i, w,
                  std::to_string(w.numOutliers) +
                      " outlier columns; int8 weights have 0 to k, other "
                      "dtypes none");
    uint64_t n64 = uint64_t(w.n), o64 = uint64_t(w.numOutliers);
    // int4 rows are whole 64-byte blocks of 128 weights.
    uint64_t dataWant = int4 ? n64 * uint64_t((w.k + 127) / 128 * 64)
                             : n64 * uint64_t(w.k) * elemTypeSize(w.type);
    if (Status st = checkRange(i, w, plan, "the weight data", w.dataOffset,
                               w.dataBytes, dataWant);
        !st)
      return st;
    uint64_t scalesWant = int8 || fp8 ? n64 * 4
                          : int4 ? n64 * uint64_t((w.k + group - 1) / group) * 4
                                 : 0;
    if (Status st = checkRange(i, w, plan, "the scales", w.scalesOffset,
                               w.scalesBytes, scalesWant);
        !st)
      return st;
    if (Status st = checkScales(i, w, plan); !st)
      return st;
    if (Status st =
            checkRange(i, w, plan, "the outlier columns", w.outlierColsOffset,
                       w.outlierColsBytes, o64 * 4);
        !st)
      return st;
    if (Status st =
            checkRange(i, w, plan, "the outlier weights", w.outliersOffset,
                       w.outliersBytes, n64 * o64 * 2);
        !st)
      return st;
    const uint8_t *cols = plan.blob.data() + w.outlierColsOffset;
    int32_t prev = -1;
    for (int64_t j = 0; j < w.numOutliers; ++j) {
      int32_t c;
      std::memcpy(&c, cols + j * 4, 4);
      if (c <= prev || c >= w.k)
        return fail(i, w,
                    "outlier column " + std::to_string(j) + " is " +
                        std::to_string(c) +
                        "; the columns are increasing and below k = " +
                        std::to_string(w.k));
      prev = c;
    }
  }
  // A weight with no constant exists only as its stored form: no other
  // step, entry or output may read it (it has no tensor to read).
  std::vector<bool> isConstant(plan.values.size(), false);
  for (const Constant &c : plan.constants)
    if (c.value >= 0 && size_t(c.value) < plan.values.size())
      isConstant[size_t(c.value)] = true;
  std::vector<bool> storedOnly(plan.values.size(), false);
  for (const StoredWeight &w : plan.weights)
    for (int32_t j = 0; j < w.numOperands; ++j) {
      int32_t id = plan.steps[size_t(w.step)].operands[size_t(w.operand + j)];
      storedOnly[size_t(id)] = !isConstant[size_t(id)];
    }
  auto readsStoredOnly = [&](int32_t id) {
    return id >= 0 && size_t(id) < storedOnly.size() && storedOnly[size_t(id)];
  };
  auto refuse = [](int32_t id, const std::string &reader) {
    return Status::invalidArgument(
        "plan: value " + std::to_string(id) +
        " exists only as a stored weight (it has no constant), but " + reader +
        " reads it");
  };
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step &s = plan.steps[si];
    for (size_t j = 0; j < s.operands.size(); ++j)
      if (readsStoredOnly(s.operands[j]) &&
          !covered.count({int32_t(si), int32_t(j)}))
        return refuse(s.operands[j], "step '" + s.kind + "' ('" + s.name +
                                         "') as operand " + std::to_string(j));
  }
  for (const Entry &e : plan.entries)
    for (const Step &s : e.steps)
      for (int32_t id : s.operands)
        if (readsStoredOnly(id))
          return refuse(id, "entry '" + e.name + "'");
  for (int32_t id : plan.outputs)
    if (readsStoredOnly(id))
      return refuse(id, "the plan's output");
  return Status::ok();
}

} // namespace folio::plan
