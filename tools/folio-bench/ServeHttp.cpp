//===- ServeHttp.cpp - A streaming OpenAI client for benchmarks -----------===//

#include "tools/folio-bench/ServeHttp.h"

#include "runtime/Bench/SseReader.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

namespace folio::bench {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

/// A request queued behind a full batch gets its response headers at once
/// but may wait long for its first token: only a server that says nothing
/// for this long counts as gone.
constexpr time_t kReadTimeoutSeconds = 600;
constexpr time_t kConnectTimeoutSeconds = 10;
/// /health and friends answer at once when the server is alive.
constexpr time_t kProbeTimeoutSeconds = 10;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string shorten(const std::string &text, size_t max = 200) {
  return text.size() <= max ? text : text.substr(0, max) + "...";
}

std::unique_ptr<httplib::Client> makeClient(const HttpTarget &target,
                                            time_t readTimeout) {
  auto client = std::make_unique<httplib::Client>(target.base);
  client->set_connection_timeout(kConnectTimeoutSeconds);
  client->set_read_timeout(readTimeout);
  client->set_tcp_nodelay(true);
  // One connection per worker for all of its requests, as benchmark
  // clients pool theirs.
  client->set_keep_alive(true);
  return client;
}

httplib::Headers headersFor(const HttpTarget &target) {
  httplib::Headers headers;
  if (!target.apiKey.empty())
    headers.emplace("Authorization", "Bearer " + target.apiKey);
  return headers;
}

std::string describe(httplib::Error error) {
  switch (error) {
  case httplib::Error::Connection:
    return "could not connect (is the server running on that port?)";
  case httplib::Error::ConnectionTimeout:
    return "the connection timed out";
  case httplib::Error::Read:
    return "the connection failed or timed out while reading the answer";
  case httplib::Error::Write:
    return "the connection failed while sending the request";
  default:
    return "HTTP client error '" + httplib::to_string(error) + "'";
  }
}

/// "HTTP <status>: <message>", the message from OpenAI's error shape when
/// the body has it.
std::string statusText(int status, const std::string &body) {
  std::string message = shorten(body);
  Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string())
    message = j["error"]["message"].get<std::string>();
  return "HTTP " + std::to_string(status) +
         (message.empty() ? "" : ": " + message);
}

Expected<std::string> get(httplib::Client &client, const HttpTarget &target,
                          const std::string &path) {
  httplib::Result r = client.Get(path.c_str(), headersFor(target));
  if (!r)
    return Status::invalidArgument("GET " + target.base + path + ": " +
                                   describe(r.error()));
  if (r->status != 200)
    return Status::invalidArgument("GET " + target.base + path + " answered " +
                                   statusText(r->status, r->body));
  return r->body;
}

/// The unlabelled samples of /metrics (Prometheus text); empty when the
/// server has no /metrics.
std::map<std::string, double> scrapeMetrics(httplib::Client &client,
                                            const HttpTarget &target) {
  std::map<std::string, double> samples;
  Expected<std::string> text = get(client, target, "/metrics");
  if (!text)
    return samples;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name;
    double value = 0;
    if (!line.empty() && line[0] != '#' && (fields >> name >> value))
      samples[name] = value;
  }
  return samples;
}

std::string requestBody(const std::string &model, const BenchRequest &r) {
  Json body = {{"model", model},
               {"prompt", r.prompt},
               {"max_tokens", r.outputLength},
               {"temperature", 0},
               {"ignore_eos", true},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  return body.dump();
}

/// One streaming request, timed from its send; fills `times` (with
/// `error` set when anything about the answer is wrong).
void runRequest(httplib::Client &client, const HttpTarget &target,
                const std::string &body, const BenchRequest &work,
                Clock::time_point start, RequestTimes &times) {
  const std::string where = "POST " + target.base + "/v1/completions: ";
  int status = 0;
  std::string errorBody, problem, finishReason;
  SseReader sse;
  std::vector<std::string> payloads;
  bool done = false, sawUsage = false;
  int64_t promptTokens = -1, completionTokens = -1;

  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = headersFor(target);
  req.headers.emplace("Content-Type", "application/json");
  req.body = body;
  req.response_handler = [&](const httplib::Response &res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char *data, size_t size, uint64_t,
                             uint64_t) {
    double now = since(start);
    if (status != 200) {
      errorBody.append(data, std::min<size_t>(size, 4096));
      return true;
    }
    payloads.clear();
    if (Status s = sse.feed(data, size, payloads); !s) {
      problem = s.message();
      return false;
    }
    bool tokens = false;
    for (const std::string &payload : payloads) {
      if (done) {
        problem = "malformed SSE: an event after 'data: [DONE]': '" +
                  shorten(payload) + "'";
        return false;
      }
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      Json chunk = Json::parse(payload, nullptr, false);
      if (!chunk.is_object()) {
        problem = "malformed SSE: an event's data is not a JSON object: '" +
                  shorten(payload) + "'";
        return false;
      }
      if (chunk.contains("error")) {
        problem = "the server ended the stream with an error: " +
                  statusText(500, payload);
        return false;
      }
      auto choices = chunk.find("choices");
      if (choices == chunk.end() || !choices->is_array()) {
        problem = "malformed SSE: a chunk without a 'choices' array: '" +
                  shorten(payload) + "'";
        return false;
      }
      if (!choices->empty()) {
        tokens = true;
        const Json &choice = choices->front();
        auto reason = choice.find("finish_reason");
        if (choice.is_object() && reason != choice.end() && reason->is_string())
          finishReason = reason->get<std::string>();
      }
      auto usage = chunk.find("usage");
      if (usage != chunk.end() && usage->is_object()) {
        sawUsage = true;
        auto count = [&](const char *key) {
          auto v = usage->find(key);
          return v != usage->end() && v->is_number_integer() ? v->get<int64_t>()
                                                             : int64_t(-1);
        };
        promptTokens = count("prompt_tokens");
        completionTokens = count("completion_tokens");
      }
    }
    if (tokens) {
      if (times.firstToken < 0)
        times.firstToken = now;
      times.tokenTimes.push_back(now);
      times.finish = now;
    }
    return true;
  };

  times.arrival = since(start);
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  bool sent = client.send(req, res, error);
  auto fail = [&](const std::string &why) { times.error = where + why; };
  if (!problem.empty())
    return fail(problem);
  if (!sent)
    return fail(describe(error));
  if (status != 200)
    return fail(statusText(status, errorBody));
  if (!done)
    return fail(std::string("the stream ended before 'data: [DONE]'") +
                (sse.hasPartialEvent() ? ", in the middle of an event" : ""));
  if (!sawUsage)
    return fail("the stream carried no usage chunk (stream_options."
                "include_usage was sent)");
  if (promptTokens != int64_t(work.prompt.size()))
    return fail("the server counted " + std::to_string(promptTokens) +
                " prompt tokens, the workload sent " +
                std::to_string(work.prompt.size()));
  if (completionTokens != int64_t(work.outputLength))
    return fail("the server generated " + std::to_string(completionTokens) +
                " tokens (finish_reason '" + finishReason +
                "'), the workload asked for " +
                std::to_string(work.outputLength) + " with ignore_eos");
  if (times.firstToken < 0)
    return fail("the stream carried no tokens");
  times.promptTokens = size_t(promptTokens);
  times.outputTokens = size_t(completionTokens);
}

} // namespace

Expected<std::string> parseServerUrl(const std::string &url) {
  const std::string scheme = "http://";
  auto bad = [&](const std::string &why) {
    return Status::invalidArgument("--url '" + url + "' " + why +
                                   "; expected http://HOST:PORT, e.g. "
                                   "http://127.0.0.1:8000");
  };
  if (url.rfind(scheme, 0) != 0)
    return bad(url.rfind("https://", 0) == 0
                   ? "uses https, which folio-serve does not speak"
                   : "does not start with http://");
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/')
    rest.pop_back();
  if (rest.find('/') != std::string::npos)
    return bad("has a path; the benchmark uses the server's /v1/ endpoints");
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return bad("names no host and port");
  std::string port = rest.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(),
                   [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port) < 1 || std::stoi(port) > 65535)
    return bad("has no port from 1 to 65535");
  return scheme + rest;
}

Expected<ServerInfo> probeServer(const HttpTarget &target) {
  auto client = makeClient(target, kProbeTimeoutSeconds);
  Expected<std::string> health = get(*client, target, "/health");
  if (!health)
    return Status::invalidArgument(
        "no serving server at " + target.base + ": " +
        health.status().message() +
        "; start one first (folio-serve --model M --tokenizer T --port P)");

  ServerInfo info;
  Expected<std::string> models = get(*client, target, "/v1/models");
  if (!models)
    return models.status();
  Json list = Json::parse(*models, nullptr, false);
  if (!list.is_object() || !list.contains("data") || !list["data"].is_array() ||
      list["data"].empty())
    return Status::invalidArgument("GET " + target.base +
                                   "/v1/models lists no model: '" +
                                   shorten(*models) + "'");
  std::vector<std::string> names;
  for (const Json &m : list["data"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string())
      return Status::invalidArgument("GET " + target.base +
                                     "/v1/models: a model without an id: '" +
                                     shorten(m.dump()) + "'");
    names.push_back(m["id"].get<std::string>());
    bool chosen = target.modelName.empty() ? names.size() == 1
                                           : names.back() == target.modelName;
    if (chosen) {
      info.modelName = names.back();
      if (m.contains("max_model_len") &&
          m["max_model_len"].is_number_unsigned())
        info.maxModelLen = m["max_model_len"].get<size_t>();
    }
  }
  if (info.modelName.empty()) {
    std::string listed;
    for (const std::string &n : names)
      listed += (listed.empty() ? "'" : ", '") + n + "'";
    return Status::invalidArgument("the server at " + target.base +
                                   " does not serve '" + target.modelName +
                                   "'; it lists " + listed);
  }

  // Only folio-serve has these; other servers leave the baseline's KV
  // budget to --kv-cache-memory.
  std::map<std::string, double> metrics = scrapeMetrics(*client, target);
  auto used = metrics.find("folio_kv_cache_blocks_used");
  auto free = metrics.find("folio_kv_cache_blocks_free");
  if (used != metrics.end() && free != metrics.end())
    info.kvBlocks = size_t(used->second + free->second);
  return info;
}

int64_t serverCounter(const HttpTarget &target, const std::string &name) {
  auto client = makeClient(target, kProbeTimeoutSeconds);
  std::map<std::string, double> metrics = scrapeMetrics(*client, target);
  auto it = metrics.find(name);
  return it == metrics.end() ? -1 : int64_t(it->second);
}

std::vector<RequestTimes> runOverHttp(const HttpTarget &target,
                                      const std::vector<BenchRequest> &work,
                                      size_t maxConcurrency, double &seconds) {
  // Bodies are built before the clock starts: the client's JSON work is
  // not the server's.
  std::vector<std::string> bodies;
  bodies.reserve(work.size());
  for (const BenchRequest &r : work)
    bodies.push_back(requestBody(target.modelName, r));
  std::vector<RequestTimes> times(work.size());
  size_t numWorkers =
      maxConcurrency == 0 ? work.size() : std::min(maxConcurrency, work.size());
  std::atomic<size_t> next{0};
  Clock::time_point start = Clock::now();
  // Workers take requests in arrival order, so with C workers request i
  // goes out at its arrival time or when an earlier request's connection
  // frees, whichever is later.
  auto worker = [&] {
    std::unique_ptr<httplib::Client> client =
        makeClient(target, kReadTimeoutSeconds);
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= work.size())
        return;
      double wait = work[i].arrivalTime - since(start);
      if (wait > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      runRequest(*client, target, bodies[i], work[i], start, times[i]);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(numWorkers);
  for (size_t w = 0; w < numWorkers; ++w)
    threads.emplace_back(worker);
  for (std::thread &t : threads)
    t.join();
  seconds = since(start);
  return times;
}

} // namespace folio::bench
