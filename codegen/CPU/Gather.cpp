//===- Gather.cpp - Embedding lookup and row gathers ----------------------===//

#include "codegen/CPU/Gather.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <cstring>

namespace folio::cpu {

using namespace detail;

namespace {

/// Finds the first index outside [0, limit); -1 when all are valid.
int64_t firstBadIndex(const int32_t *idx, int64_t n, int64_t limit) {
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= limit)
      return i;
  return -1;
}

/// Widening loops the compiler vectorises for the baseline ISA; a gather is
/// bound by memory, not by the conversion.
void convertRow(const void *src, DType t, float scale, float *dst, int64_t n) {
  if (t == DType::F32) {
    const float *s = static_cast<const float *>(src);
    if (scale == 1.0f)
      std::memcpy(dst, s, size_t(n) * 4);
    else
      for (int64_t i = 0; i < n; ++i)
        dst[i] = s[i] * scale;
    return;
  }
  const uint16_t *s = static_cast<const uint16_t *>(src);
  if (t == DType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToFloat(s[i]) * scale;
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    dst[i] = f16ToFloat(s[i]) * scale;
}

/// Row r of a packed table as f32 times `scale`; each element is
/// weightViewAt(v, r, c) * scale, computed the same way.
void widenPackedRow(const WeightView &v, int64_t r, float scale, float *dst) {
  const int64_t k = v.k;
  if (isPlainFloat(v.storage)) {
    convertRow(static_cast<const char *>(v.data) +
                   size_t(r * k) * dtypeSize(v.storage),
               v.storage, scale, dst, k);
    return;
  }
  if (v.storage == DType::I8) {
    const int8_t *row = static_cast<const int8_t *>(v.data) + r * k;
    const float s = v.scales[r];
    for (int64_t c = 0; c < k; ++c)
      dst[c] = float(row[c]) * s * scale;
    // Outlier columns hold 0 codes; their weights are the bf16 side rows.
    const uint16_t *o = v.outliers + r * v.numOutliers;
    for (int64_t j = 0; j < v.numOutliers; ++j)
      dst[v.outlierCols[j]] = bf16ToFloat(o[j]) * scale;
    return;
  }
  if (v.storage == DType::FP8E4M3) {
    const uint8_t *row = static_cast<const uint8_t *>(v.data) + r * k;
    const float s = v.scales[r];
    for (int64_t c = 0; c < k; ++c)
      dst[c] = fp8E4M3ToFloat(row[c]) * s * scale;
    return;
  }
  // int4: each group's (scale, min) pair widened once for its codes.
  const uint8_t *row =
      static_cast<const uint8_t *>(v.data) + r * int4RowBytes(k);
  const uint16_t *params = v.groupParams + r * int4Groups(k, v.groupSize) * 2;
  for (int64_t g = 0; g * v.groupSize < k; ++g) {
    const float step = f16ToFloat(params[2 * g]),
                min = f16ToFloat(params[2 * g + 1]);
    for (int64_t c = g * v.groupSize; c < std::min(k, (g + 1) * v.groupSize);
         ++c)
      dst[c] = (min + float(int4CodeAt(row, c)) * step) * scale;
  }
}

} // namespace

Status embedding(const int32_t *ids, int64_t numTokens, const void *table,
                 DType tableType, int64_t vocab, int64_t dim, float *out,
                 float scale, ThreadPool &pool) {
  const char *kernel = "embedding";
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numTokens", numTokens));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "vocab", vocab));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "dim", dim));
  if (!isPlainFloat(tableType))
    return Status::error(std::string("embedding: tables are f32, bf16 or f16, "
                                     "not ") +
                         dtypeName(tableType));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "ids", ids, numTokens));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "table", table, vocab * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "out", out, numTokens * dim));
  int64_t bad = firstBadIndex(ids, numTokens, vocab);
  if (bad >= 0)
    return Status::error("embedding: token id " + std::to_string(ids[bad]) +
                         " at position " + std::to_string(bad) +
                         " is outside the vocabulary [0, " +
                         std::to_string(vocab) + ")");
  size_t rowBytes = size_t(dim) * dtypeSize(tableType);
  pool.parallelFor(numTokens, rowGrain(dim), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      convertRow(static_cast<const char *>(table) + size_t(ids[t]) * rowBytes,
                 tableType, scale, out + t * dim, dim);
  });
  return Status::success();
}

Status embeddingRows(const int32_t *ids, int64_t numTokens,
                     const WeightView &table, float *out, float scale,
                     ThreadPool &pool) {
  const char *kernel = "embeddingRows";
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numTokens", numTokens));
  if (Status s = checkWeightView(table); !s.ok())
    return Status::error(std::string("embeddingRows: ") + s.message());
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "ids", ids, numTokens));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "out", out, numTokens * table.k));
  int64_t bad = firstBadIndex(ids, numTokens, table.n);
  if (bad >= 0)
    return Status::error("embeddingRows: token id " + std::to_string(ids[bad]) +
                         " at position " + std::to_string(bad) +
                         " is outside the vocabulary [0, " +
                         std::to_string(table.n) + ")");
  pool.parallelFor(numTokens, rowGrain(table.k), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      widenPackedRow(table, ids[t], scale, out + t * table.k);
  });
  return Status::success();
}

Status gatherRows(const float *src, int64_t srcRows, int64_t dim,
                  const int32_t *indices, int64_t numIndices, float *out,
                  ThreadPool &pool) {
  const char *kernel = "gatherRows";
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "srcRows", srcRows));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numIndices", numIndices));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "dim", dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "src", src, srcRows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "indices", indices, numIndices));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "out", out, numIndices * dim));
  int64_t bad = firstBadIndex(indices, numIndices, srcRows);
  if (bad >= 0)
    return Status::error("gatherRows: index " + std::to_string(indices[bad]) +
                         " at position " + std::to_string(bad) +
                         " is outside [0, " + std::to_string(srcRows) + ")");
  pool.parallelFor(numIndices, rowGrain(dim), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(out + i * dim, src + int64_t(indices[i]) * dim,
                  size_t(dim) * sizeof(float));
  });
  return Status::success();
}

} // namespace folio::cpu
