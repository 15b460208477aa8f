//===- LoadModel.cpp - --model and --speculative-model --------------------===//

#include "tools/common/LoadModel.h"

#include "compiler/Target/PlanKVCache.h"
#include "runtime/Plan/PlanIO.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace folio::tools {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Removes the temporary plan however loading ends: once mapped, the
/// mapping keeps the data.
struct TempFile {
  std::string path;
  ~TempFile() {
    if (!path.empty())
      ::unlink(path.c_str());
  }
};

Expected<TempFile> makeTempPlan() {
  const char *dir = std::getenv("TMPDIR");
  std::string pattern =
      std::string(dir && *dir ? dir : "/tmp") + "/folio-compiled-XXXXXX.folio";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = ::mkstemps(name.data(), 6);
  if (fd < 0)
    return Status::internal("cannot create a temporary plan '" + pattern +
                            "': " + std::strerror(errno) +
                            " (set TMPDIR to a writable directory)");
  ::close(fd);
  return TempFile{name.data()};
}

/// folioc's stderr without its "folioc: error: " prefixes, as one message.
std::string foliocMessage(std::string log) {
  const std::string prefix = "folioc: error: ";
  std::string out;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    std::string line = log.substr(
        pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? log.size() : end + 1;
    if (line.rfind(prefix, 0) == 0)
      line = line.substr(prefix.size());
    if (line.empty())
      continue;
    out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

/// Runs `argv`, collecting its stdout and stderr; returns its exit status (-1
/// when it did not exit normally) or an error when it could not start.
Expected<int> runCollectingStderr(const std::vector<std::string> &argv,
                                  std::string &err) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    return Status::internal(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDERR_FILENO);
  // Whatever it might print goes with its messages, never into this
  // tool's stdout (folio-run --json, a served stream).
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                         environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipeFds[1]);
  if (rc != 0) {
    ::close(pipeFds[0]);
    return Status::notFound("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipeFds[0], buf, sizeof(buf));
    if (n > 0) {
      err.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    break;
  }
  ::close(pipeFds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Expected<plan::Plan> compileWithFolioc(const std::string &path,
                                       const ModelLoadOptions &options) {
  Expected<std::string> folioc = findFolioc();
  if (!folioc)
    return Status::notFound("cannot compile '" + path +
                            "': " + folioc.status().message());
  Expected<TempFile> temp = makeTempPlan();
  if (!temp)
    return temp.status();
  std::string err;
  Expected<int> rc = runCollectingStderr(
      foliocCommand(*folioc, path, temp->path, options), err);
  if (!rc)
    return Status::internal("cannot compile '" + path +
                            "': " + rc.status().message());
  if (*rc != 0)
    return Status::invalidArgument(
        "cannot compile '" + path + "': " +
        (err.empty() ? *folioc + " failed with no message" +
                           (*rc < 0 ? " (killed by a signal)" : "")
                     : foliocMessage(err)));
  // On success folioc prints only warnings.
  if (!err.empty())
    std::cerr << err;
  // The plan was just written by folioc from this model: its metadata is
  // still checked, the weights need no second pass.
  return plan::readPlan(temp->path, plan::ReadPlanOptions{false});
}

} // namespace

ModelLoadOptions modelLoadOptions(const EngineFlags &flags) {
  ModelLoadOptions options;
  options.kvCacheDtype = flags.kvCacheDtype;
  options.verifyWeights = flags.verifyWeights;
  return options;
}

std::vector<std::string> foliocCommand(const std::string &folioc,
                                       const std::string &onnx,
                                       const std::string &output,
                                       const ModelLoadOptions &options) {
  std::vector<std::string> argv = {folioc,
                                   onnx,
                                   "-o",
                                   output,
                                   "--kv-cache-dtype=" + options.kvCacheDtype,
                                   "--weight-dtype=" + options.weightDtype};
  if (options.blockSize != 0)
    argv.push_back("--block-size=" + std::to_string(options.blockSize));
  return argv;
}

bool isPlanPath(const std::string &path) { return endsWith(path, ".folio"); }

std::string executableDir() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return "";
  std::string path(self, size_t(n));
  return path.substr(0, path.rfind('/') + 1);
}

Expected<std::string> findFolioc() {
  if (const char *env = std::getenv("FOLIOC"); env && *env) {
    if (::access(env, X_OK) != 0)
      return Status::notFound(std::string("FOLIOC=") + env +
                              " is not an executable");
    return std::string(env);
  }
  std::string dir = executableDir();
  if (dir.empty())
    return Status::notFound(
        "cannot find folioc: /proc/self/exe is unreadable (set FOLIOC)");
  std::string folioc = dir + "folioc";
  if (::access(folioc.c_str(), X_OK) != 0)
    return Status::notFound(
        "compiling an .onnx needs folioc next to this tool, and there is no " +
        folioc +
        " (set FOLIOC to its path, or compile with folioc -o M.folio and "
        "pass the plan)");
  return folioc;
}

Expected<plan::Plan> loadOrCompileModel(const std::string &path,
                                        const ModelLoadOptions &options) {
  if (endsWith(path, ".onnx"))
    return compileWithFolioc(path, options);
  if (!isPlanPath(path))
    return Status::invalidArgument("--model: '" + path +
                                   "' is neither an .onnx nor a .folio file");
  Expected<plan::Plan> p =
      plan::readPlan(path, plan::ReadPlanOptions{options.verifyWeights});
  if (!p)
    return p;
  if (Status s = checkPlanKVCacheDType(*p, path, options.kvCacheDtype); !s)
    return s;
  if (Status s = checkPlanBlockSize(*p, path, options.blockSize); !s)
    return s;
  return p;
}

Expected<std::shared_ptr<const plan::Plan>>
loadModelPlan(const std::string &path, const EngineFlags &flags) {
  Expected<plan::Plan> loaded =
      loadOrCompileModel(path, modelLoadOptions(flags));
  if (!loaded)
    return loaded.status();
  return std::make_shared<const plan::Plan>(std::move(*loaded));
}

Expected<std::shared_ptr<const plan::Plan>>
loadDraftPlan(const SpeculativeFlags &flags, const ModelLoadOptions &options) {
  if (flags.method != "draft")
    return std::shared_ptr<const plan::Plan>();
  ModelLoadOptions draftOptions = options;
  draftOptions.blockSize = 0; // the draft's own default
  if (!flags.weightDtype.empty())
    draftOptions.weightDtype = flags.weightDtype;
  Expected<plan::Plan> loaded = loadOrCompileModel(flags.model, draftOptions);
  if (!loaded)
    return Status::invalidArgument("--speculative-model " + flags.model + ": " +
                                   loaded.status().message());
  return std::make_shared<const plan::Plan>(std::move(*loaded));
}

} // namespace folio::tools
