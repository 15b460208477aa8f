//===- StepKernel.cpp - The CPU kernel registry ---------------------------===//

#include "runtime/Executor/StepKernel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace folio::exec {

Status StepContext::error(const std::string &message) const {
  std::string where = step.kind;
  if (!step.name.empty())
    where += " '" + step.name + "'";
  return Status::invalidArgument(where + ": " + message);
}

void LinearInputRecorder::record(int32_t step, int32_t operand, const float *x,
                                 int64_t rows, int64_t k) {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<float> &into = values[{step, operand}];
  if (into.empty())
    into.assign(size_t(k), 0.0f);
  const int64_t cols = std::min<int64_t>(k, int64_t(into.size()));
  // The largest |x| per column; a NaN, once seen, stays.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = std::fabs(x[r * k + c]);
      float &slot = into[size_t(c)];
      if (!std::isnan(slot) && (std::isnan(v) || v > slot))
        slot = v;
    }
}

plan::LinearInputAbsMax LinearInputRecorder::absMax() const {
  std::lock_guard<std::mutex> lock(mu);
  return values;
}

Tensor BufferArena::make(int32_t id, ElemType type, Shape shape) const {
  int32_t b = plan && id >= 0 && size_t(id) < plan->values.size()
                  ? plan->values[size_t(id)].buffer
                  : -1;
  size_t need = size_t(numelOf(shape)) * plan::elemTypeSize(type);
  if (b < 0 || size_t(b) >= storage.size() || !storage[size_t(b)] ||
      need > capacity[size_t(b)])
    return Tensor::empty(type, std::move(shape));
  Tensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.storage = storage[size_t(b)];
  t.data = storage[size_t(b)].get();
  return t;
}

void BufferArena::size(int64_t tokens, int64_t rows, int64_t seqs) {
  storage.resize(plan->buffers.size());
  capacity.resize(plan->buffers.size(), 0);
  for (size_t b = 0; b < plan->buffers.size(); ++b) {
    const plan::BufferInfo &info = plan->buffers[b];
    int64_t count = 1;
    switch (info.symbol) {
    case plan::DimSymbol::Tokens:
      count = tokens;
      break;
    case plan::DimSymbol::Rows:
      count = rows;
      break;
    case plan::DimSymbol::Seqs:
      count = seqs;
      break;
    case plan::DimSymbol::None:
      break;
    }
    size_t bytes = 0;
    if (__builtin_mul_overflow(size_t(std::max<int64_t>(info.staticBytes, 0)),
                               size_t(std::max<int64_t>(count, 0)), &bytes) ||
        bytes > SIZE_MAX - 64) {
      storage[b] = nullptr; // make() falls back to fresh tensors
      capacity[b] = 0;
      continue;
    }
    if (storage[b] && capacity[b] >= bytes)
      continue;
    // 64-byte aligned, like every tensor the kernels get; at least one
    // line so that an empty step still has a valid pointer.
    size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void *mem = std::aligned_alloc(64, rounded);
    if (!mem) {
      storage[b] = nullptr; // make() falls back to fresh tensors
      capacity[b] = 0;
      continue;
    }
    storage[b] = std::shared_ptr<void>(mem, [](void *m) { std::free(m); });
    capacity[b] = rounded;
  }
}

Status fromCpu(const StepContext &ctx, const cpu::Status &s) {
  return s.ok() ? Status::ok() : ctx.error(s.message());
}

const StepKernel *findCPUKernel(const std::string &kind) {
  for (const auto *table : {&elementwiseStepKernels(),
                            &dataMovementStepKernels(), &folioStepKernels()})
    for (const StepKernel &k : *table)
      if (kind == k.kind)
        return &k;
  return nullptr;
}

std::vector<std::string> cpuKernelKinds() {
  std::vector<std::string> kinds;
  for (const auto *table : {&elementwiseStepKernels(),
                            &dataMovementStepKernels(), &folioStepKernels()})
    for (const StepKernel &k : *table)
      kinds.push_back(k.kind);
  return kinds;
}

} // namespace folio::exec
