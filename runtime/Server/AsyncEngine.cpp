//===- AsyncEngine.cpp - The serving engine on its own thread -------------===//

#include "runtime/Server/AsyncEngine.h"

#include <algorithm>

using namespace folio;
using namespace folio::server;

AsyncEngine::AsyncEngine(std::unique_ptr<core::ServingEngine> engine,
                         std::shared_ptr<ServerMetrics> metrics,
                         AsyncEngineOptions options)
    : engine_(std::move(engine)),
      metrics_(metrics ? std::move(metrics)
                       : std::make_shared<ServerMetrics>()),
      maxInFlight_(engine_->getScheduler().config().maxNumSeqs +
                   options.maxQueuedRequests) {
  refreshGauges();
  thread_ = std::thread([this] { run(); });
}

AsyncEngine::~AsyncEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  std::lock_guard<std::mutex> join(joinMutex_);
  if (thread_.joinable())
    thread_.join();
}

Expected<std::shared_ptr<RequestStream>>
AsyncEngine::submit(NewRequest request) {
  std::vector<NewRequest> one;
  one.push_back(std::move(request));
  Expected<std::vector<std::shared_ptr<RequestStream>>> streams =
      submitAll(std::move(one));
  if (!streams)
    return streams.status();
  return std::move(streams->front());
}

Expected<std::vector<std::shared_ptr<RequestStream>>>
AsyncEngine::submitAll(std::vector<NewRequest> requests, size_t *refusedIndex) {
  size_t numSamples = 0;
  std::vector<std::unique_ptr<Command>> commands;
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<std::future<Status>> admitted;
  for (NewRequest &request : requests) {
    size_t n = size_t(std::max<int32_t>(request.samplingParams.n, 1));
    numSamples += n;
    auto command = std::make_unique<Command>();
    command->kind = Command::Add;
    command->stream = std::make_shared<RequestStream>(
        request.requestId, n, request.promptTokenIds.size());
    command->request = std::move(request);
    streams.push_back(command->stream);
    admitted.push_back(command->admitted.get_future());
    commands.push_back(std::move(command));
  }
  std::string what = requests.size() > 1
                         ? "this batch of " + std::to_string(requests.size()) +
                               " prompts needs " + std::to_string(numSamples)
                         : "this request needs " + std::to_string(numSamples);
  if (numSamples > maxInFlight_)
    return Status::invalidArgument(
        what +
        " sequences at once (n for each prompt), and the server "
        "admits at most " +
        std::to_string(maxInFlight_) +
        " (max-num-seqs plus max-queued-requests)");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_ || stopping_)
      return Status::resourceExhausted(
          "the server is shutting down and admits no new requests");
    if (inFlight_ + numSamples > maxInFlight_)
      return Status::resourceExhausted(
          "the server holds " + std::to_string(inFlight_) +
          " unfinished sequences and admits at most " +
          std::to_string(maxInFlight_) +
          " (max-num-seqs plus max-queued-requests); " + what +
          "; retry later");
    inFlight_ += numSamples;
    for (std::unique_ptr<Command> &command : commands)
      commands_.push_back(std::move(command));
  }
  wake_.notify_all();
  Status refused = Status::ok();
  std::vector<bool> ok(streams.size(), false);
  for (size_t i = 0; i < streams.size(); ++i) {
    Status status = admitted[i].get();
    ok[i] = status.isOk();
    if (!status && refused.isOk()) {
      refused = status;
      if (refusedIndex)
        *refusedIndex = i;
    }
  }
  if (!refused.isOk()) {
    for (size_t i = 0; i < streams.size(); ++i)
      if (ok[i])
        abort(streams[i]->id(), FinishReason::Abort);
    return refused;
  }
  return streams;
}

void AsyncEngine::abort(const RequestId &id, FinishReason reason) {
  auto command = std::make_unique<Command>();
  command->kind = Command::Abort;
  command->abortId = id;
  command->reason = reason;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return; // The engine thread aborts everything on its way out.
    commands_.push_back(std::move(command));
  }
  wake_.notify_all();
}

void AsyncEngine::drainAndStop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining_ = true;
  }
  wake_.notify_all();
  std::lock_guard<std::mutex> join(joinMutex_);
  if (thread_.joinable())
    thread_.join();
}

bool AsyncEngine::isDraining() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return draining_ || stopping_;
}

size_t AsyncEngine::numInFlight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return inFlight_;
}

void AsyncEngine::run() {
  for (;;) {
    std::deque<std::unique_ptr<Command>> commands;
    bool stopping, draining;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Only this thread touches the engine, so reading it here is safe.
      wake_.wait(lock, [&] {
        return !commands_.empty() || stopping_ || draining_ ||
               engine_->hasUnfinishedRequests();
      });
      commands.swap(commands_);
      stopping = stopping_;
      draining = draining_;
    }
    for (std::unique_ptr<Command> &command : commands)
      apply(*command, stopping);
    if (!commands.empty())
      refreshGauges(); // Aborted requests' blocks show as free at once.
    if (stopping) {
      failAll(FinishReason::Abort, "");
      refreshGauges();
      return;
    }
    if (engine_->hasUnfinishedRequests()) {
      Expected<std::vector<RequestOutput>> outputs = engine_->step();
      if (!outputs) {
        failAll(FinishReason::Error,
                "the engine step failed: " + outputs.status().message());
      } else {
        // Gauges first: a client that sees its tokens sees the step's
        // state on /metrics too.
        refreshGauges();
        for (const RequestOutput &output : *outputs)
          route(output);
        // Nothing ran and nothing holds memory: the waiting requests can
        // never be admitted, and stepping again would spin.
        if (outputs->empty() && engine_->getScheduler().numRunning() == 0 &&
            engine_->hasUnfinishedRequests())
          failAll(FinishReason::Error,
                  "the engine cannot schedule the waiting requests (the KV "
                  "cache holds none of them)");
      }
    }
    refreshGauges();
    if (draining && !engine_->hasUnfinishedRequests()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (commands_.empty())
        return;
    }
  }
}

void AsyncEngine::apply(Command &command, bool stopping) {
  if (command.kind == Command::Abort) {
    const RequestId &id = command.abortId;
    if (samples_.count(id)) {
      (void)engine_->abortRequest(id);
      finishSample(id, command.reason);
      return;
    }
    auto parent = parents_.find(id);
    if (parent == parents_.end())
      return;
    std::vector<RequestId> ids = parent->second; // finishSample edits it
    for (const RequestId &sampleId : ids) {
      (void)engine_->abortRequest(sampleId);
      finishSample(sampleId, command.reason);
    }
    return;
  }

  const NewRequest &request = command.request;
  size_t numSamples = command.stream->numSamples();
  Status status =
      stopping ? Status::resourceExhausted(
                     "the server is shutting down and admits no new requests")
               : engine_->addRequest(request);
  if (!status) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      inFlight_ -= numSamples;
    }
    command.admitted.set_value(status);
    return;
  }
  Clock::time_point now = Clock::now();
  if (numSamples == 1) {
    samples_[request.requestId] = {command.stream, 0, now, now, false};
  } else {
    std::vector<RequestId> &ids = parents_[request.requestId];
    for (size_t i = 0; i < numSamples; ++i) {
      RequestId id = request.requestId + "#" + std::to_string(i);
      samples_[id] = {command.stream, i, now, now, false};
      ids.push_back(id);
    }
  }
  metrics_->recordPromptTokens(request.promptTokenIds.size());
  command.admitted.set_value(Status::ok());
}

void AsyncEngine::route(const RequestOutput &output) {
  auto it = samples_.find(output.requestId);
  if (it == samples_.end())
    return; // Aborted while the step ran.
  Sample &sample = it->second;
  if (!output.newTokenIds.empty()) {
    Clock::time_point now = Clock::now();
    std::chrono::duration<double> since =
        now - (sample.sawToken ? sample.lastToken : sample.arrival);
    if (sample.sawToken)
      metrics_->observeInterTokenLatency(since.count());
    else
      metrics_->observeTimeToFirstToken(since.count());
    sample.sawToken = true;
    sample.lastToken = now;
    metrics_->recordGenerationTokens(output.newTokenIds.size());
  }
  if (output.finished) {
    finishSample(output.requestId, output.finishReason, output.error,
                 output.newTokenIds, output.newLogprobs);
    return;
  }
  if (output.newTokenIds.empty())
    return;
  StreamEvent event;
  event.sample = sample.index;
  event.tokens = output.newTokenIds;
  event.logprobs = output.newLogprobs;
  sample.stream->push(std::move(event));
}

void AsyncEngine::finishSample(const RequestId &id, FinishReason reason,
                               const std::string &error,
                               std::vector<TokenId> tokens,
                               std::vector<TokenLogprobs> logprobs) {
  auto it = samples_.find(id);
  if (it == samples_.end())
    return;
  StreamEvent event;
  event.sample = it->second.index;
  event.finished = true;
  event.finishReason = reason;
  event.error = error;
  event.tokens = std::move(tokens);
  event.logprobs = std::move(logprobs);
  std::shared_ptr<RequestStream> stream = it->second.stream;
  metrics_->recordFinished(reason);
  {
    // Before the event: a consumer that saw the end sees the slot free.
    std::lock_guard<std::mutex> lock(mutex_);
    --inFlight_;
  }
  stream->push(std::move(event));
  if (stream->numSamples() > 1) {
    auto parent = parents_.find(stream->id());
    if (parent != parents_.end()) {
      std::vector<RequestId> &ids = parent->second;
      ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
      if (ids.empty())
        parents_.erase(parent);
    }
  }
  samples_.erase(it);
}

void AsyncEngine::failAll(FinishReason reason, const std::string &error) {
  std::vector<RequestId> ids;
  ids.reserve(samples_.size());
  for (const auto &entry : samples_)
    ids.push_back(entry.first);
  for (const RequestId &id : ids) {
    (void)engine_->abortRequest(id);
    finishSample(id, reason, error);
  }
}

void AsyncEngine::refreshGauges() {
  const Scheduler &scheduler = engine_->getScheduler();
  const KVCacheManager &kv = scheduler.kvCache();
  EngineGauges gauges;
  gauges.numRunning = scheduler.numRunning();
  gauges.numWaiting = scheduler.numWaiting();
  gauges.kvBlocksFree = kv.numFreeBlocks();
  gauges.kvBlocksUsed = kv.pool().numUsableBlocks() - kv.numFreeBlocks();
  gauges.prefixQueryTokens = kv.numPrefixQueryTokens();
  gauges.prefixHitTokens = kv.numPrefixHitTokens();
  gauges.numPreemptions = scheduler.numPreemptions();
  gauges.speculative = engine_->proposer() != nullptr;
  const core::SpeculativeStats &spec = engine_->speculativeStats();
  gauges.specDraftTokens = spec.numProposed;
  gauges.specAcceptedTokens = spec.numAccepted;
  metrics_->setEngineGauges(gauges);
}
