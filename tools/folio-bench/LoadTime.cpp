//===- LoadTime.cpp - How long starting on a compiled plan takes ----------===//

#include "tools/folio-bench/LoadTime.h"
#include "tools/folio-bench/BenchData.h"
#include "tools/folio-bench/Json.h"

#include "tools/common/LoadModel.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace folio::bench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

Status dropPageCache() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0 || ::write(fd, "1", 1) != 1) {
    std::string why = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return Status::invalidArgument(
        "--drop-caches: cannot write /proc/sys/vm/drop_caches (" + why +
        "); it needs root. Leave it out to time a warm page cache");
  }
  ::close(fd);
  return Status::ok();
}

/// Maps `path` and reads one byte of every page: the floor any loader of
/// the file pays.
Expected<double> timeTouch(const std::string &path) {
  Clock::time_point start = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::notFound("cannot open '" + path +
                            "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return Status::invalidArgument("'" + path + "' is empty or unreadable");
  }
  size_t bytes = size_t(st.st_size);
  void *map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED)
    return Status::internal("cannot map '" + path +
                            "': " + std::strerror(errno));
  const volatile unsigned char *p =
      static_cast<const volatile unsigned char *>(map);
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  unsigned sum = 0;
  for (size_t off = 0; off < bytes; off += page)
    sum += p[off];
  ::munmap(map, bytes);
  double t = secondsSince(start);
  // Keeps the reads (volatile already does; this documents the intent).
  asm volatile("" : : "r"(sum));
  return t;
}

/// Runs `argv` with stdout and stderr to /dev/null; its wall time, or an
/// error when it does not exit 0.
Expected<double> timeProcess(const std::vector<std::string> &argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  Clock::time_point start = Clock::now();
  pid_t pid;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                         environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return Status::notFound("cannot run " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double t = secondsSince(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (const std::string &a : argv)
      cmd += (cmd.empty() ? "" : " ") + a;
    return Status::internal("'" + cmd + "' failed (run it to see why)");
  }
  return t;
}

Expected<std::string> siblingRunner() {
  std::string dir = tools::executableDir();
  if (dir.empty())
    return Status::notFound("cannot read /proc/self/exe (pass --runner)");
  std::string path = dir + "folio-run";
  if (::access(path.c_str(), X_OK) != 0)
    return Status::notFound("no folio-run next to folio-bench at " + path +
                            " (pass --runner)");
  return path;
}

void stats(Json &j, const std::string &name, const std::vector<double> &s) {
  j.key(name).beginObject();
  j.field("median", median(s));
  j.key("samples").values(s);
  j.endObject();
}

} // namespace

Expected<std::string> runLoadTime(const std::string &planPath,
                                  const LoadTimeOptions &options) {
  if (!tools::isPlanPath(planPath))
    return Status::invalidArgument(
        "--mode=load times a compiled plan: '" + planPath +
        "' is not a .folio file (compile it with folioc -o M.folio)");
  std::string runner = options.runner;
  if (runner.empty()) {
    Expected<std::string> found = siblingRunner();
    if (!found)
      return found.status();
    runner = *found;
  }
  struct stat st;
  if (::stat(planPath.c_str(), &st) != 0)
    return Status::notFound("cannot open '" + planPath +
                            "': " + std::strerror(errno));
  std::vector<std::string> run = {runner,
                                  "--model",
                                  planPath,
                                  "--prompt-ids",
                                  "1",
                                  "--max-new-tokens",
                                  "1",
                                  "--threads",
                                  std::to_string(options.threads)};
  std::vector<std::string> runNoVerify = run;
  runNoVerify.push_back("--no-verify-weights");

  // One untimed run of each: a plan folio-run refuses fails here, and the
  // runtime's own files are cached as they would be on a serving machine.
  if (Expected<double> t = timeProcess(run); !t)
    return t.status();
  std::vector<double> touch, full, noVerify;
  auto timed = [&](auto &&measure, std::vector<double> &into) -> Status {
    if (options.dropCaches)
      if (Status s = dropPageCache(); !s)
        return s;
    Expected<double> t = measure();
    if (!t)
      return t.status();
    into.push_back(*t);
    return Status::ok();
  };
  for (int r = 0; r < options.repeats; ++r) {
    // Interleaved, so that a change of load on a shared machine hits all
    // three alike.
    if (Status s = timed([&] { return timeTouch(planPath); }, touch); !s)
      return s;
    if (Status s = timed([&] { return timeProcess(run); }, full); !s)
      return s;
    if (Status s = timed([&] { return timeProcess(runNoVerify); }, noVerify);
        !s)
      return s;
  }
  double touchS = median(touch);
  Json j;
  j.beginObject();
  j.field("cpu", cpuName());
  j.field("plan", planPath);
  j.field("plan_bytes", int64_t(st.st_size));
  j.field("page_cache", options.dropCaches ? "cold" : "warm");
  j.field("threads", options.threads);
  j.field("repeats", options.repeats);
  stats(j, "touch_s", touch);
  stats(j, "folio_run_s", full);
  stats(j, "folio_run_no_verify_s", noVerify);
  j.field("ratio", touchS > 0 ? median(full) / touchS : 0.0);
  j.field("ratio_no_verify", touchS > 0 ? median(noVerify) / touchS : 0.0);
  j.endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
