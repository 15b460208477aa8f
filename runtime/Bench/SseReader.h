//===- SseReader.h - Server-sent events from a byte stream ------*- C++ -*-===//
//
// Splits a text/event-stream body, delivered in pieces of any size, into
// the payloads of its "data:" events, as folio-serve writes them: each
// event is one "data: <payload>" line followed by a blank line. Anything
// else (another field, a line without a field, a data line of an event
// that already has one) is an error that names what was seen, so a
// benchmark client never mistakes a broken stream for a short answer.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_BENCH_SSEREADER_H
#define FOLIO_RUNTIME_BENCH_SSEREADER_H

#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::bench {

class SseReader {
public:
  /// Appends bytes; complete events' payloads go to `payloads`.
  Status feed(const char *data, size_t size,
              std::vector<std::string> &payloads);
  /// Whether bytes of an unfinished event are held (at the stream's end:
  /// a truncated event).
  bool hasPartialEvent() const;

private:
  Status parseLine(const std::string &line, std::vector<std::string> &payloads);

  std::string pending_; ///< bytes after the last complete line
  bool inEvent_ = false;
  std::string data_;
};

} // namespace folio::bench

#endif // FOLIO_RUNTIME_BENCH_SSEREADER_H
