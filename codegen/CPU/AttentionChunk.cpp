//===- AttentionChunk.cpp - A chunk of keys' cache rows -------------------===//

#include "codegen/CPU/AttentionChunk.h"

#include <initializer_list>

namespace folio::cpu::detail {

namespace {

/// Requests the lines of uint16 [first, last] into L2.
void prefetchRange(const uint16_t *first, const uint16_t *last) {
  uintptr_t line = reinterpret_cast<uintptr_t>(first) & ~uintptr_t(63);
  uintptr_t end = reinterpret_cast<uintptr_t>(last);
  for (; line <= end; line += 64)
    __builtin_prefetch(reinterpret_cast<const void *>(line), 0, 2);
}

} // namespace

void gatherChunkRows(const AttentionTile &a, const KvPool &kp, const KvPool &vp,
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
      for (const uint16_t *par : {kr.params, vr.params})
        if (par)
          __builtin_prefetch(par, 0, 2);
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
    if (kq) {
      // The block's slots are consecutive: one range of lines each, to the
      // last element of the last row's params.
      const int64_t last = (m - 1) * int64_t(parSlot) + a.paramRow - 1;
      prefetchRange(kq, kq + last);
      prefetchRange(vq, vq + last);
    }
    for (int64_t t = 0; t < m; ++t, ++j) {
      c.k[j] = k + t * slotBytes;
      c.v[j] = v + t * slotBytes;
      c.kPar[j] = kq ? kq + t * parSlot : nullptr;
      c.vPar[j] = vq ? vq + t * parSlot : nullptr;
    }
    pos += m;
  }
}

void prefetchChunkRows(const ChunkRows &c, size_t rowBytes) {
  for (int64_t j = 0; j < c.n; ++j)
    for (const char *row : {c.k[j], c.v[j]})
      for (size_t b = 0; b < rowBytes; b += 64)
        __builtin_prefetch(row + b, 0, 2);
}

} // namespace folio::cpu::detail
