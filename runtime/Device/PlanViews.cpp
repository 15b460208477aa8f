//===- PlanViews.cpp - Where a read of a plan value lands -----------------===//

#include "runtime/Device/PlanViews.h"

namespace folio::device {

int64_t staticElements(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d >= 0)
      n *= d;
  return n;
}

int64_t elementsOf(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n = d < 0 || n < 0 ? -1 : n * d;
  return n;
}

PlanViews::PlanViews(const plan::Plan &plan) : plan(plan) {
  producer.assign(plan.values.size(), -1);
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int32_t r : plan.steps[i].results)
      if (r >= 0 && producer[size_t(r)] < 0)
        producer[size_t(r)] = int32_t(i);
  written.assign(plan.values.size(), false);
  for (const plan::Argument &a : plan.inputs)
    written[size_t(a.value)] = true;
  for (const plan::Constant &c : plan.constants)
    written[size_t(c.value)] = true;
}

bool PlanViews::resolve(int32_t value, LaunchOperand &out,
                        std::string &why) const {
  if (!resolveView(value, out, why))
    return false;
  out.view = value;
  return true;
}

bool PlanViews::resolveView(int32_t value, LaunchOperand &out,
                            std::string &why) const {
  if (value < 0 || size_t(value) >= plan.values.size()) {
    why = "an absent operand";
    return false;
  }
  if (written[size_t(value)]) {
    out = LaunchOperand{};
    out.value = value;
    return true;
  }
  int32_t p = producer[size_t(value)];
  if (p < 0) {
    why = "a value nothing computes";
    return false;
  }
  const plan::Step &s = plan.steps[size_t(p)];
  if (s.kind != "reshape" && s.kind != "slice") {
    why = "the result of a " + s.kind + " step no CUDA kernel computes";
    return false;
  }
  if (s.operands.empty() || !resolveView(s.operands[0], out, why))
    return false;
  if (s.kind == "reshape")
    return true; // the same elements in the same order
  const plan::ValueInfo &in = plan.values[size_t(s.operands[0])];
  int64_t rank = int64_t(in.dims.size());
  int64_t axis = s.getInt("axis", -1), start = s.getInt("start", -1),
          size = s.getInt("size", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank || in.dims[size_t(axis)] < 0 || start < 0 ||
      size < 0 || start + size > in.dims[size_t(axis)]) {
    why = "a slice of a dynamic or missing axis";
    return false;
  }
  std::vector<int64_t> after(in.dims.begin() + axis + 1, in.dims.end());
  int64_t inner = elementsOf(after);
  if (inner < 0) {
    why = "a slice with a dynamic dim after its axis";
    return false;
  }
  int64_t width = in.dims[size_t(axis)] * inner; // elements per outer row
  if (out.stride != 0) {
    // Already a strided view: a slice within each of its rows only.
    if (width != out.rowElems) {
      why = "a slice of a strided view across its rows";
      return false;
    }
    out.offset += start * inner;
    out.rowElems = size * inner;
    return true;
  }
  out.offset += start * inner;
  // One outer row (every dim before the axis is 1) stays contiguous.
  std::vector<int64_t> before(in.dims.begin(), in.dims.begin() + axis);
  if (elementsOf(before) != 1 && size != in.dims[size_t(axis)]) {
    out.stride = width;
    out.rowElems = size * inner;
  }
  return true;
}

bool PlanViews::contiguous(int32_t value, LaunchOperand &out,
                           std::string &why) const {
  if (!resolve(value, out, why))
    return false;
  if (out.stride != 0) {
    why = "a strided view where the kernel reads contiguous data";
    return false;
  }
  return true;
}

} // namespace folio::device
