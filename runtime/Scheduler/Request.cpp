//===- Request.cpp - A request's serving state ----------------------------===//

#include "runtime/Scheduler/Request.h"

using namespace folio;

const char *folio::finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return "none";
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Abort:
    return "abort";
  case FinishReason::Error:
    return "error";
  }
  return "unknown";
}
