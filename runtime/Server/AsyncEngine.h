//===- AsyncEngine.h - The serving engine on its own thread ----*- C++ -*-===//
//
// core::ServingEngine is not thread-safe, so one thread owns it and runs its
// loop; every other thread talks to that loop through a command queue
// (llama.cpp's server-queue, STYLE.md 17): submit() queues a request and
// waits for the engine to admit or refuse it, abort() queues an abort, and
// each admitted request streams its tokens back through its own
// RequestStream. The loop applies queued commands between steps, so an
// abort frees the request's blocks before the next step runs.
//
// Shutdown: drainAndStop() refuses new requests, lets the admitted ones
// finish, then ends the thread; the destructor aborts whatever is left.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_ASYNCENGINE_H
#define FOLIO_RUNTIME_SERVER_ASYNCENGINE_H

#include "runtime/Core/ServingEngine.h"
#include "runtime/Server/RequestStream.h"
#include "runtime/Server/ServerMetrics.h"
#include "runtime/Support/Status.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace folio::server {

struct AsyncEngineOptions {
  /// Sequences (each of n samples counts) held beyond the engine's
  /// max-num-seqs before submit() refuses with ResourceExhausted.
  size_t maxQueuedRequests = 1024;
};

class AsyncEngine {
public:
  /// Starts the engine thread. `metrics` receives token, latency and
  /// finish events and the engine's gauges after every step.
  AsyncEngine(std::unique_ptr<core::ServingEngine> engine,
              std::shared_ptr<ServerMetrics> metrics,
              AsyncEngineOptions options = {});
  /// Aborts every unfinished request and joins the engine thread.
  ~AsyncEngine();

  AsyncEngine(const AsyncEngine &) = delete;
  AsyncEngine &operator=(const AsyncEngine &) = delete;

  /// Hands `request` to the engine thread and waits until it is admitted
  /// (its stream then carries every token) or refused: ResourceExhausted
  /// when the queue is full or the engine is shutting down, the engine's
  /// own refusal (InvalidArgument, AlreadyExists) otherwise.
  Expected<std::shared_ptr<RequestStream>> submit(NewRequest request);

  /// submit() for a batch admitted whole or not at all: room for all of
  /// its sequences is taken at once (else ResourceExhausted, nothing
  /// queued; InvalidArgument when they could never fit, more than
  /// maxInFlight()), and when the engine refuses one request the ones it
  /// admitted are aborted. The streams come back in the requests' order.
  /// `refusedIndex`, when given, gets the index of the request the engine
  /// refused (the first, when several were).
  Expected<std::vector<std::shared_ptr<RequestStream>>>
  submitAll(std::vector<NewRequest> requests, size_t *refusedIndex = nullptr);

  /// Ends request `id` (all of its samples) or one sample `id#i`, from any
  /// thread: its blocks are freed before the engine's next step, and its
  /// stream gets a final event with `reason` (Abort for a client that went
  /// away, Stop for a stop string the server found). Unknown or finished
  /// ids are ignored.
  void abort(const RequestId &id, FinishReason reason = FinishReason::Abort);

  /// Refuses new requests, waits until every admitted one finished, then
  /// stops the engine thread. Idempotent.
  void drainAndStop();
  bool isDraining() const;

  /// Sequences submitted and not yet finished.
  size_t numInFlight() const;
  size_t maxInFlight() const { return maxInFlight_; }

private:
  struct Command {
    enum Kind { Add, Abort } kind;
    NewRequest request;
    std::shared_ptr<RequestStream> stream;
    std::promise<Status> admitted;
    RequestId abortId;
    FinishReason reason = FinishReason::Abort;
  };
  /// Engine-thread bookkeeping of one sample.
  struct Sample {
    std::shared_ptr<RequestStream> stream;
    size_t index = 0;
    std::chrono::steady_clock::time_point arrival, lastToken;
    bool sawToken = false;
  };
  using Clock = std::chrono::steady_clock;

  void run();
  void apply(Command &command, bool stopping);
  void route(const RequestOutput &output);
  /// Ends sample `id` with `reason` (its last tokens in the same event):
  /// stream event, metrics, bookkeeping.
  void finishSample(const RequestId &id, FinishReason reason,
                    const std::string &error = {},
                    std::vector<TokenId> tokens = {},
                    std::vector<TokenLogprobs> logprobs = {});
  /// Fails every unfinished request (engine error or shutdown).
  void failAll(FinishReason reason, const std::string &error);
  void refreshGauges();

  std::unique_ptr<core::ServingEngine> engine_;
  std::shared_ptr<ServerMetrics> metrics_;
  const size_t maxInFlight_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Command>> commands_;
  bool draining_ = false;
  bool stopping_ = false;
  size_t inFlight_ = 0;

  // Engine thread only.
  std::unordered_map<RequestId, Sample> samples_;
  /// Parent id -> its sample ids, for requests with n > 1.
  std::unordered_map<RequestId, std::vector<RequestId>> parents_;

  std::mutex joinMutex_;
  std::thread thread_;
};

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_ASYNCENGINE_H
