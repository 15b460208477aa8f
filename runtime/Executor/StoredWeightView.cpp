//===- StoredWeightView.cpp - A stored weight as the kernels read it ------===//

#include "runtime/Executor/StoredWeightView.h"

#include "runtime/Plan/KernelDType.h"

namespace folio::exec {

using plan::ElemType;

Status storedWeightView(const plan::Plan &plan, const plan::StoredWeight &w,
                        cpu::WeightView &v) {
  int64_t groupSize = 0;
  if (!plan::storedWeightDType(w, v.storage, groupSize))
    return Status::invalidArgument(std::string("stored weight of ") +
                                   plan::elemTypeName(w.type) +
                                   "; the CPU reads f32, bf16, f16, int8, "
                                   "fp8_e4m3 or int4");
  const uint8_t *blob = plan.blob.data();
  v.n = w.n;
  v.k = w.k;
  v.data = blob + w.dataOffset;
  if (w.type == ElemType::I8) {
    v.scales = reinterpret_cast<const float *>(blob + w.scalesOffset);
    v.numOutliers = w.numOutliers;
    v.outlierCols =
        reinterpret_cast<const int32_t *>(blob + w.outlierColsOffset);
    v.outliers = reinterpret_cast<const uint16_t *>(blob + w.outliersOffset);
  }
  if (w.type == ElemType::F8E4M3)
    v.scales = reinterpret_cast<const float *>(blob + w.scalesOffset);
  if (w.type == ElemType::I4) {
    v.groupSize = groupSize;
    v.groupParams = reinterpret_cast<const uint16_t *>(blob + w.scalesOffset);
    v.int8X = w.activations == ElemType::I8;
  }
  return Status::ok();
}

} // namespace folio::exec
