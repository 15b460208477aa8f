//===- CorpusTest.cpp - The fuzzers' crashing inputs, replayed ------------===//
//
// tools/fuzz/corpus/<target>/ holds every input a fuzzer crashed on, and
// tools/fuzz/corpus/expected.txt the message each must now be refused
// with. Each input goes the way its fuzzer sent it (an ONNX model through
// compileONNXToPlan and, when it compiles, one step of its plan; a plan
// through parsePlan and one step) and must stop with that message.
//
//===----------------------------------------------------------------------===//

#include "tools/fuzz/RunPlan.h"

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace folio;
using ::testing::HasSubstr;

namespace {

const std::string kCorpus =
    std::string(FOLIO_SOURCE_DIR) + "/tools/fuzz/corpus";

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// expected.txt: "<target>/<file><TAB><message substring>" per line.
std::map<std::string, std::string> expectations() {
  std::map<std::string, std::string> out;
  std::istringstream lines(readFile(kCorpus + "/expected.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << "no tab in: " << line;
    if (tab != std::string::npos)
      out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

std::set<std::string> listDir(const std::string &target) {
  std::set<std::string> files;
  if (DIR *d = opendir((kCorpus + "/" + target).c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.')
        files.insert(target + "/" + e->d_name);
    closedir(d);
  }
  return files;
}

/// The first refusal on the plan's way: its message, or "" when it ran.
std::string runPlan(Expected<plan::Plan> plan) {
  if (!plan)
    return plan.status().message();
  Status s =
      fuzz::runPlanOnce(std::make_shared<const plan::Plan>(std::move(*plan)));
  return s ? "" : s.message();
}

std::string replay(const std::string &name) {
  std::string path = kCorpus + "/" + name;
  if (name.rfind("plan/", 0) == 0)
    return runPlan(plan::parsePlan(readFile(path)));
  mlir::folio::CompileToPlanOptions options;
  options.onWarning = [](const std::string &) {};
  llvm::Expected<plan::Plan> compiled =
      mlir::folio::compileONNXToPlan(path, options);
  if (!compiled)
    return llvm::toString(compiled.takeError());
  if (Status s = plan::validatePlan(*compiled); !s)
    return "the compiled plan fails validation: " + s.message();
  return runPlan(std::move(*compiled));
}

// Every committed input has an expectation and is refused with it.
TEST(FuzzCorpus, EveryInputIsRefusedWithItsMessage) {
  std::map<std::string, std::string> expected = expectations();
  std::set<std::string> files = listDir("onnx");
  for (const std::string &f : listDir("plan"))
    files.insert(f);
  EXPECT_FALSE(files.empty());
  for (const std::string &f : files) {
    auto it = expected.find(f);
    if (it == expected.end()) {
      ADD_FAILURE() << f << " has no line in tools/fuzz/corpus/expected.txt";
      continue;
    }
    EXPECT_THAT(replay(f), HasSubstr(it->second)) << f;
  }
  for (const auto &[f, message] : expected)
    EXPECT_TRUE(files.count(f))
        << "expected.txt names " << f << ", which is not in the corpus";
}

} // namespace
