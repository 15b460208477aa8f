//===- Status.h - Error reporting for the serving runtime ------*- C++ -*-===//
//
// The runtime never aborts on user input (bad flags, bad requests, bad
// sampling parameters): such errors travel back as a Status carrying a
// message, and Expected<T> carries either a value or that Status. Broken
// internal preconditions are programming errors and are asserted instead.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SUPPORT_STATUS_H
#define FOLIO_RUNTIME_SUPPORT_STATUS_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace folio {

/// Broad error classes, so callers (the HTTP server) can map them to
/// protocol codes without parsing messages.
enum class StatusCode {
  Ok,
  InvalidArgument,   ///< The input is malformed (HTTP 400).
  NotFound,          ///< An id names nothing (HTTP 404).
  AlreadyExists,     ///< An id is already in use (HTTP 409).
  ResourceExhausted, ///< Fits nowhere, ever (e.g. longer than the KV pool).
  Internal,          ///< A component produced something inconsistent.
};

/// Success, or an error class plus a human-readable message.
class [[nodiscard]] Status {
public:
  Status() = default;

  static Status ok() { return Status(); }
  static Status error(StatusCode code, std::string message) {
    assert(code != StatusCode::Ok && "an error needs an error code");
    return Status(code, std::move(message));
  }
  static Status invalidArgument(std::string message) {
    return error(StatusCode::InvalidArgument, std::move(message));
  }
  static Status notFound(std::string message) {
    return error(StatusCode::NotFound, std::move(message));
  }
  static Status alreadyExists(std::string message) {
    return error(StatusCode::AlreadyExists, std::move(message));
  }
  static Status resourceExhausted(std::string message) {
    return error(StatusCode::ResourceExhausted, std::move(message));
  }
  static Status internal(std::string message) {
    return error(StatusCode::Internal, std::move(message));
  }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// A value of type T, or the Status explaining why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Status status) : storage_(std::move(status)) {
    assert(!std::get<Status>(storage_).isOk() &&
           "an Expected without a value needs an error");
  }

  bool hasValue() const { return storage_.index() == 0; }
  explicit operator bool() const { return hasValue(); }

  T &value() {
    assert(hasValue() && "no value: check the status first");
    return std::get<T>(storage_);
  }
  const T &value() const {
    assert(hasValue() && "no value: check the status first");
    return std::get<T>(storage_);
  }
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The error; Status::ok() when there is a value.
  Status status() const {
    return hasValue() ? Status::ok() : std::get<Status>(storage_);
  }

private:
  std::variant<T, Status> storage_;
};

} // namespace folio

#endif // FOLIO_RUNTIME_SUPPORT_STATUS_H
