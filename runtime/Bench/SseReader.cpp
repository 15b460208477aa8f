//===- SseReader.cpp - Server-sent events from a byte stream --------------===//

#include "runtime/Bench/SseReader.h"

namespace folio::bench {
namespace {

/// At most this much of a bad line goes into an error message.
std::string excerpt(const std::string &line) {
  constexpr size_t kMax = 80;
  return line.size() <= kMax ? line : line.substr(0, kMax) + "...";
}

} // namespace

Status SseReader::feed(const char *data, size_t size,
                       std::vector<std::string> &payloads) {
  pending_.append(data, size);
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    size_t end = nl > start && pending_[nl - 1] == '\r' ? nl - 1 : nl;
    if (Status s = parseLine(pending_.substr(start, end - start), payloads); !s)
      return s;
  }
  pending_.erase(0, start);
  return Status::ok();
}

Status SseReader::parseLine(const std::string &line,
                            std::vector<std::string> &payloads) {
  if (line.empty()) {
    // A blank line ends the event; blank lines between events are allowed.
    if (inEvent_)
      payloads.push_back(std::move(data_));
    data_.clear();
    inEvent_ = false;
    return Status::ok();
  }
  if (line.rfind("data:", 0) != 0)
    return Status::invalidArgument("malformed server-sent event: expected "
                                   "'data: <json>' lines, got '" +
                                   excerpt(line) + "'");
  if (inEvent_)
    return Status::invalidArgument(
        "malformed server-sent event: a second data line before the blank "
        "line that ends the event: '" +
        excerpt(line) + "'");
  size_t from = line.size() > 5 && line[5] == ' ' ? 6 : 5;
  data_ = line.substr(from);
  inEvent_ = true;
  return Status::ok();
}

bool SseReader::hasPartialEvent() const {
  return inEvent_ || !pending_.empty();
}

} // namespace folio::bench
