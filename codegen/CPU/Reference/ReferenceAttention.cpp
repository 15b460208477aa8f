//===- ReferenceAttention.cpp - Attention by the definition ---------------===//

#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace folio::cpu::ref {

namespace {

/// One sequence's attention with keys/values fetched through `kAt`/`vAt`
/// (position, kv head, dim) -> value.
void attendSequence(const float *q, int64_t qBegin, int64_t qLen,
                    int64_t seqLen, int64_t numKvHeads, int64_t headDim,
                    const AttentionParams &p,
                    const std::function<float(int64_t, int64_t, int64_t)> &kAt,
                    const std::function<float(int64_t, int64_t, int64_t)> &vAt,
                    float *out) {
  int64_t group = p.numHeads / numKvHeads;
  for (int64_t i = 0; i < qLen; ++i) {
    int64_t t = qBegin + i;
    int64_t pos = seqLen - qLen + i;
    int64_t lo = 0;
    if (p.slidingWindow > 0 && pos - p.slidingWindow + 1 > 0)
      lo = pos - p.slidingWindow + 1;
    for (int64_t h = 0; h < p.numHeads; ++h) {
      int64_t g = h / group;
      const float *qr = q + (t * p.numHeads + h) * headDim;
      std::vector<double> s;
      double mx = -INFINITY;
      for (int64_t kp = lo; kp <= pos; ++kp) {
        double d = 0;
        for (int64_t e = 0; e < headDim; ++e)
          d += double(qr[e]) * kAt(kp, g, e);
        d *= p.scale;
        if (p.softCap > 0)
          d = std::tanh(d / p.softCap) * p.softCap;
        s.push_back(d);
        mx = std::fmax(mx, d);
      }
      double sum = 0;
      for (double &v : s) {
        v = std::exp(v - mx);
        sum += v;
      }
      for (int64_t e = 0; e < headDim; ++e) {
        double acc = 0;
        for (int64_t kp = lo; kp <= pos; ++kp)
          acc += s[size_t(kp - lo)] * vAt(kp, g, e);
        out[(t * p.numHeads + h) * headDim + e] = float(acc / sum);
      }
    }
  }
}

} // namespace

void pagedAttention(const float *q, const KVCacheView &cache,
                    const RaggedBatch &batch, const AttentionParams &params,
                    float *out) {
  const int64_t hd = cache.headDim;
  const int64_t paramRow = kvRowParams(cache.dtype, hd, cache.group);
  for (int64_t s = 0; s < batch.numSeqs; ++s) {
    const int32_t *table = batch.blockTables + s * batch.maxBlocksPerSeq;
    // Rows are widened by the format's definition (dequantizeKvRow) when
    // first read: blocks no query reads may be invalid.
    struct Rows {
      std::vector<float> values;
      std::vector<bool> done;
    };
    int64_t len = batch.seqLens[s];
    Rows rows[2];
    for (Rows &r : rows) {
      r.values.resize(size_t(len * cache.numKvHeads * hd));
      r.done.assign(size_t(len * cache.numKvHeads), false);
    }
    auto at = [&](int which) {
      return [&, which](int64_t pos, int64_t g, int64_t e) {
        Rows &r = rows[which];
        size_t i = size_t(pos * cache.numKvHeads + g);
        if (!r.done[i]) {
          int64_t slot =
              int64_t(table[pos / cache.blockSize]) * cache.blockSize +
              pos % cache.blockSize;
          const void *pool = which == 0 ? cache.k : cache.v;
          const void *params = which == 0 ? cache.kParams : cache.vParams;
          const float *scales = which == 0 ? cache.kScale : cache.vScale;
          const char *data = static_cast<const char *>(pool) +
                             size_t(slot) * cache.slotBytes() +
                             size_t(g) * cache.headRowBytes();
          const uint16_t *p =
              params ? static_cast<const uint16_t *>(params) +
                           size_t((slot * cache.numKvHeads + g) * paramRow)
                     : nullptr;
          float *dst = r.values.data() + i * hd;
          int64_t block = table[pos / cache.blockSize];
          if (isKivi(cache.dtype) && cache.residentIndex[block] >= 0) {
            // Resident: the f32 rows of the block's residual entry.
            const float *res = which == 0 ? cache.kResidual : cache.vResidual;
            const float *src =
                res + ((int64_t(cache.residentIndex[block]) * cache.blockSize +
                        pos % cache.blockSize) *
                           cache.numKvHeads +
                       g) *
                          hd;
            std::copy(src, src + hd, dst);
          } else if (isKivi(cache.dtype) && which == 0) {
            // Keys: the block's per-channel params.
            kiviDequantizeKey(
                reinterpret_cast<const uint8_t *>(data),
                static_cast<const uint16_t *>(cache.kParams) +
                    size_t((block * cache.numKvHeads + g) * hd * 2),
                hd, dst);
          } else {
            dequantizeKvRow(data, p, hd, cache.dtype, cache.group,
                            scales ? scales[g] : 1.0f, dst);
          }
          r.done[i] = true;
        }
        return r.values[i * size_t(hd) + size_t(e)];
      };
    };
    int64_t qBegin = batch.queryStartLoc[s];
    attendSequence(q, qBegin, batch.queryStartLoc[s + 1] - qBegin,
                   batch.seqLens[s], cache.numKvHeads, cache.headDim, params,
                   at(0), at(1), out);
  }
}

void denseAttention(const float *q, const float *const *k,
                    const float *const *v, const int32_t *queryStartLoc,
                    const int32_t *seqLens, int64_t numSeqs, int64_t numKvHeads,
                    int64_t headDim, const AttentionParams &params,
                    float *out) {
  for (int64_t s = 0; s < numSeqs; ++s) {
    auto at = [&](const float *base) {
      return [base, numKvHeads, headDim](int64_t pos, int64_t g, int64_t e) {
        return base[(pos * numKvHeads + g) * headDim + e];
      };
    };
    int64_t qBegin = queryStartLoc[s];
    attendSequence(q, qBegin, queryStartLoc[s + 1] - qBegin, seqLens[s],
                   numKvHeads, headDim, params, at(k[s]), at(v[s]), out);
  }
}

} // namespace folio::cpu::ref
