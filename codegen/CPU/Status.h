//===- Status.h - Error reporting for CPU kernels ---------------*- C++ -*-===//
//
// Kernels validate shapes and parameters that come from user input (a model,
// a request) and report a message instead of aborting.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_STATUS_H
#define FOLIO_CODEGEN_CPU_STATUS_H

#include <string>
#include <utility>

namespace folio::cpu {

/// The outcome of a kernel call: success, or an error with a message that
/// names the offending argument.
class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return msg; }

private:
  Status() = default;
  bool failed = false;
  std::string msg;
};

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_STATUS_H
