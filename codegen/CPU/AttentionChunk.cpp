//===- AttentionChunk.cpp - A chunk of keys' cache rows -------------------===//

#include "codegen/CPU/AttentionChunk.h"

#include <initializer_list>

namespace folio::cpu::detail {

void gatherRows(const AttentionTile &a, const KvPool &kp, const KvPool &vp,
                int64_t p0, int64_t n, ChunkRows &c) {
  c.n = n;
  if (a.dtype == DType::I2) {
    KvRowCursor cursor(a, p0);
    for (int64_t j = 0; j < n; ++j, cursor.next()) {
      KvRowRef kr = kp.at(cursor), vr = vp.at(cursor);
      c.k[j] = kr.row;
      c.v[j] = vr.row;
      c.kPar[j] = kr.params;
      c.vPar[j] = vr.params;
    }
    return;
  }
  const size_t head = size_t(a.kvHead) * a.rowBytes, slotBytes = a.slotBytes;
  const size_t parHead = size_t(a.kvHead * a.paramRow),
               parSlot = size_t(a.paramSlot);
  for (int64_t j = 0, pos = p0; j < n;) {
    int64_t block = pos / a.blockSize, in = pos % a.blockSize;
    size_t slot = size_t(int64_t(a.blockTable[block]) * a.blockSize + in);
    int64_t m = a.blockSize - in < n - j ? a.blockSize - in : n - j;
    const char *k = kp.data + slot * slotBytes + head;
    const char *v = vp.data + slot * slotBytes + head;
    const uint16_t *kq =
        kp.params ? kp.params + slot * parSlot + parHead : nullptr;
    const uint16_t *vq =
        vp.params ? vp.params + slot * parSlot + parHead : nullptr;
    for (int64_t t = 0; t < m; ++t, ++j) {
      c.k[j] = k + t * slotBytes;
      c.v[j] = v + t * slotBytes;
      c.kPar[j] = kq ? kq + t * parSlot : nullptr;
      c.vPar[j] = vq ? vq + t * parSlot : nullptr;
    }
    pos += m;
  }
}

void prefetchParams(const uint16_t *const *params, int64_t n, size_t stride) {
  for (int64_t j = 0; j < n;) {
    if (!params[j])
      return;
    // The run of keys whose params are `stride` apart (one block).
    int64_t e = j + 1;
    while (e < n && params[e] == params[e - 1] + stride)
      ++e;
    uintptr_t first = reinterpret_cast<uintptr_t>(params[j]) & ~uintptr_t(63);
    uintptr_t last =
        reinterpret_cast<uintptr_t>(params[e - 1] + 1) & ~uintptr_t(63);
    for (uintptr_t line = first; line <= last; line += 64)
      __builtin_prefetch(reinterpret_cast<const void *>(line), 0, 2);
    j = e;
  }
}

void prefetchChunk(const ChunkRows &c, size_t rowBytes, size_t paramStride) {
  for (int64_t j = 0; j < c.n; ++j)
    for (const char *row : {c.k[j], c.v[j]})
      for (size_t b = 0; b < rowBytes; b += 64)
        __builtin_prefetch(row + b, 0, 2);
  prefetchParams(c.kPar, c.n, paramStride);
  prefetchParams(c.vPar, c.n, paramStride);
}

} // namespace folio::cpu::detail
