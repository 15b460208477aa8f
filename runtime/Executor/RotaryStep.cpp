//===- RotaryStep.cpp - A rotary step's frequencies -----------------------===//

#include "runtime/Executor/RotaryStep.h"

namespace folio::exec {

std::string rotaryParamsOf(const plan::Step &step, int64_t headDim,
                           cpu::RotaryParams &p) {
  p = cpu::RotaryParams();
  p.headDim = headDim;
  p.rotaryDim = step.getInt("rotary_dim", 0);
  p.base = float(step.getFloat("base", 10000.0));
  std::string style = step.getString("style", "half_split");
  if (style != "half_split" && style != "interleaved")
    return "style '" + style +
           "' is not a rotary style (half_split, "
           "interleaved)";
  p.style = style == "interleaved" ? cpu::RotaryStyle::Interleaved
                                   : cpu::RotaryStyle::HalfSplit;
  std::string scaling = step.getString("scaling", "none");
  p.factor = float(step.getFloat("scaling_factor", 1.0));
  if (scaling == "none") {
    p.scaling = cpu::RopeScaling::None;
  } else if (scaling == "linear") {
    p.scaling = cpu::RopeScaling::Linear;
  } else if (scaling == "llama3") {
    p.scaling = cpu::RopeScaling::Llama3;
    p.lowFreqFactor = float(step.getFloat("low_freq_factor", 1.0));
    p.highFreqFactor = float(step.getFloat("high_freq_factor", 4.0));
    p.originalMaxPositions = step.getInt("original_max_position", 8192);
  } else {
    return "rope scaling '" + scaling +
           "' is not supported yet (none, linear, llama3)";
  }
  if (cpu::Status s = cpu::validateRotary(p); !s.ok())
    return s.message();
  return "";
}

} // namespace folio::exec
