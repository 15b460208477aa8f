//===- RequestStream.h - One request's tokens, engine to client -*- C++ -*-===//
//
// The per-request channel between the engine thread (producer) and the
// HTTP thread serving the request (consumer). The engine never blocks on a
// slow client: push() only appends under a mutex; the consumer waits on a
// condition variable with a timeout, so it can also notice that its client
// went away and abort the request.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_REQUESTSTREAM_H
#define FOLIO_RUNTIME_SERVER_REQUESTSTREAM_H

#include "runtime/Sampler/Sampler.h"
#include "runtime/Scheduler/Request.h"
#include "runtime/Support/Types.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace folio::server {

/// News of one sample of a request: tokens, and whether it ended.
struct StreamEvent {
  /// Which of the request's n samples (0 when n == 1).
  size_t sample = 0;
  std::vector<TokenId> tokens;
  /// One entry per token when the request asked for logprobs.
  std::vector<TokenLogprobs> logprobs;
  bool finished = false;
  FinishReason finishReason = FinishReason::None;
  /// With FinishReason::Error: why.
  std::string error;
};

class RequestStream {
public:
  RequestStream(RequestId id, size_t numSamples, size_t numPromptTokens)
      : id_(std::move(id)), numSamples_(numSamples),
        numPromptTokens_(numPromptTokens), samplesLeft_(numSamples) {}

  const RequestId &id() const { return id_; }
  size_t numSamples() const { return numSamples_; }
  size_t numPromptTokens() const { return numPromptTokens_; }

  /// Engine side: appends an event and wakes the consumer. Events of a
  /// sample that already finished are dropped, so every sample ends
  /// exactly once whichever of abort and the engine gets there first.
  void push(StreamEvent event);

  /// Consumer side: waits until events are queued or `timeout` passes,
  /// then takes every queued event (empty on timeout).
  std::vector<StreamEvent> wait(std::chrono::milliseconds timeout);

  /// Consumer side: waits until every sample finished or `timeout`
  /// passes; token events alone do not end the wait, so a consumer can let
  /// them gather and still see the end at once.
  void waitAllFinished(std::chrono::milliseconds timeout);

  /// Whether every sample finished (its last event may still be queued).
  bool allFinished() const;
  /// Whether `sample` finished.
  bool sampleFinished(size_t sample) const;

private:
  const RequestId id_;
  const size_t numSamples_;
  const size_t numPromptTokens_;

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable ended_; ///< signalled when the last sample ends
  std::deque<StreamEvent> events_;
  std::vector<bool> finished_ = std::vector<bool>(numSamples_, false);
  size_t samplesLeft_;
};

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_REQUESTSTREAM_H
