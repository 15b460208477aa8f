//===- RequestStream.cpp - One request's tokens, engine to client ---------===//

#include "runtime/Server/RequestStream.h"

#include <cassert>

using namespace folio;
using namespace folio::server;

void RequestStream::push(StreamEvent event) {
  bool ended = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    assert(event.sample < numSamples_ && "event for a sample out of range");
    if (finished_[event.sample])
      return;
    if (event.finished) {
      finished_[event.sample] = true;
      ended = --samplesLeft_ == 0;
    }
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
  if (ended)
    ended_.notify_all();
}

void RequestStream::waitAllFinished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ended_.wait_for(lock, timeout, [&] { return samplesLeft_ == 0; });
}

std::vector<StreamEvent>
RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<StreamEvent> out(std::make_move_iterator(events_.begin()),
                               std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool RequestStream::allFinished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samplesLeft_ == 0;
}

bool RequestStream::sampleFinished(size_t sample) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sample < numSamples_ && finished_[sample];
}
