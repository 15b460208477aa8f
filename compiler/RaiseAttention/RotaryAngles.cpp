//===- RotaryAngles.cpp - What a model's cos/sin tables encode ------------===//

#include "compiler/RaiseAttention/RotaryAngles.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::folio;

/// Float32 tables carry about 1e-7 relative error per value, and the angle
/// p * f is rounded in float32 by the model, so the tolerance grows with p.
static double angleTolerance(int64_t position) {
  return 1e-4 + 2e-6 * double(position);
}

/// The nearest integer when `v` is one up to float32 rounding (a base of
/// 10000 read back from float inv_freq is 9999.97).
static double roundIfClose(double v) {
  double r = std::round(v);
  return std::fabs(v - r) <= 1e-4 * std::fabs(v) ? r : v;
}

FailureOr<RotaryAngles>
mlir::folio::analyzeRotaryAngles(ArrayRef<int64_t> positions, int64_t pairs,
                                 AngleReader cosAt, AngleReader sinAt,
                                 std::string &error) {
  std::ostringstream os;
  auto fail = [&]() {
    error = os.str();
    return failure();
  };
  if (positions.size() < 2 || positions[0] != 0 || positions[1] != 1 ||
      pairs <= 0) {
    os << "too few positions to read the rotary angles";
    return fail();
  }
  for (int64_t i = 0; i < pairs; ++i)
    for (size_t p = 0; p < positions.size(); ++p) {
      double c = cosAt(p, i), s = sinAt(p, i);
      if (!std::isfinite(c) || !std::isfinite(s) ||
          std::fabs(c * c + s * s - 1) > 1e-3) {
        os << "cos/sin of pair " << i << " at position " << positions[p]
           << " are " << c << " and " << s
           << ", not a rotation (cos^2 + sin^2 != 1)";
        return fail();
      }
      if (p == 0 && (std::fabs(c - 1) > 1e-5 || std::fabs(s) > 1e-5)) {
        os << "the angle of pair " << i
           << " at position 0 is not 0 (cos = " << c << ", sin = " << s << ")";
        return fail();
      }
    }

  RotaryAngles result;
  bool contiguous = true;
  for (size_t p = 0; p < positions.size(); ++p)
    contiguous &= positions[p] == int64_t(p);
  if (contiguous) {
    result.rows = positions.size();
    result.table.resize(result.rows * 2 * pairs);
    for (int64_t p = 0; p < result.rows; ++p)
      for (int64_t i = 0; i < pairs; ++i) {
        result.table[p * 2 * pairs + i] = cosAt(p, i);
        result.table[p * 2 * pairs + pairs + i] = sinAt(p, i);
      }
  }

  // Frequencies from position 1 (all inv_freq are below pi), then check that
  // every evaluated angle is position * frequency.
  SmallVector<double> freq(pairs);
  bool linear = true;
  for (int64_t i = 0; i < pairs && linear; ++i) {
    freq[i] = std::atan2(sinAt(1, i), cosAt(1, i));
    if (!(freq[i] > 0))
      linear = false;
    for (size_t p = 0; p < positions.size() && linear; ++p) {
      double angle = double(positions[p]) * freq[i];
      double tol = angleTolerance(positions[p]);
      linear = std::fabs(cosAt(p, i) - std::cos(angle)) <= tol &&
               std::fabs(sinAt(p, i) - std::sin(angle)) <= tol;
    }
  }
  if (!linear)
    return result;

  double factor = 1.0 / freq[0];
  double base = 10000.0;
  if (pairs > 1)
    base = roundIfClose(std::pow(freq[0] / freq[1], double(pairs)));
  bool geometric = std::isfinite(base) && base > 1;
  for (int64_t i = 0; i < pairs && geometric; ++i) {
    double expected = freq[0] * std::pow(base, -double(i) / double(pairs));
    geometric = std::fabs(freq[i] - expected) <= 2e-5 * expected;
  }
  if (!geometric)
    return result;
  result.geometric = true;
  result.base = base;
  result.scalingFactor =
      std::fabs(factor - 1) <= 1e-5 ? 1.0 : roundIfClose(factor);
  return result;
}
