//===- LoadModelTest.cpp - --model loading through folioc -----------------===//
//
// The serving tools compile an .onnx by running folioc (tools/common/
// LoadModel.h). These tests stand a script in for folioc, so they check the
// command line, where folioc is looked for, and how its failures become one
// message, without compiling anything.
//
//===----------------------------------------------------------------------===//

#include "tools/common/LoadModel.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace folio;

namespace {

/// Sets an environment variable for one test and restores it after.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old, hadValue = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (hadValue)
      ::setenv(name, saved.c_str(), 1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::string saved;
  bool hadValue = false;
};

/// An executable shell script standing in for folioc.
std::string writeScript(const std::string &name, const std::string &body) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(LoadModel, FoliocCommandCarriesEveryOption) {
  tools::ModelLoadOptions o;
  EXPECT_EQ(tools::foliocCommand("/x/folioc", "m.onnx", "out.folio", o),
            (std::vector<std::string>{"/x/folioc", "m.onnx", "-o", "out.folio",
                                      "--kv-cache-dtype=auto",
                                      "--weight-dtype=f32"}));
  o.kvCacheDtype = "int4";
  o.weightDtype = "fp8_e4m3";
  o.blockSize = 32;
  EXPECT_EQ(tools::foliocCommand("folioc", "m.onnx", "o", o),
            (std::vector<std::string>{
                "folioc", "m.onnx", "-o", "o", "--kv-cache-dtype=int4",
                "--weight-dtype=fp8_e4m3", "--block-size=32"}));
}

TEST(LoadModel, FindsFoliocFromTheEnvironment) {
  std::string script = writeScript("folioc-ok", "exit 0");
  {
    ScopedEnv env("FOLIOC", script);
    Expected<std::string> found = tools::findFolioc();
    ASSERT_TRUE(found) << found.status().message();
    EXPECT_EQ(*found, script);
  }
  ScopedEnv env("FOLIOC", ::testing::TempDir() + "/no-such-folioc");
  Expected<std::string> missing = tools::findFolioc();
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("no-such-folioc is not an "
                                            "executable"),
            std::string::npos)
      << missing.status().message();
}

TEST(LoadModel, FoliocErrorsBecomeOneMessage) {
  ScopedEnv env("FOLIOC",
                writeScript("folioc-fails",
                            "echo 'folioc: error: node n (#3, ai.onnx Foo, "
                            "opset 17): unsupported' >&2\n"
                            "echo 'note: see the node' >&2\nexit 1"));
  Expected<plan::Plan> p =
      tools::loadOrCompileModel("model.onnx", tools::ModelLoadOptions());
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().message(),
            "cannot compile 'model.onnx': node n (#3, ai.onnx Foo, opset 17): "
            "unsupported\nnote: see the node");
}

TEST(LoadModel, FoliocStdoutIsCapturedNotPrinted) {
  ScopedEnv env("FOLIOC",
                writeScript("folioc-stdout", "echo 'to stdout'\nexit 2"));
  testing::internal::CaptureStdout();
  Expected<plan::Plan> p =
      tools::loadOrCompileModel("model.onnx", tools::ModelLoadOptions());
  std::string out = testing::internal::GetCapturedStdout();
  ASSERT_FALSE(p);
  EXPECT_EQ(out, "");
  EXPECT_EQ(p.status().message(), "cannot compile 'model.onnx': to stdout");
}

TEST(LoadModel, SilentFailureAndKilledFolioc) {
  {
    ScopedEnv env("FOLIOC", writeScript("folioc-silent", "exit 1"));
    Expected<plan::Plan> p =
        tools::loadOrCompileModel("m.onnx", tools::ModelLoadOptions());
    ASSERT_FALSE(p);
    EXPECT_NE(p.status().message().find("failed with no message"),
              std::string::npos)
        << p.status().message();
  }
  ScopedEnv env("FOLIOC", writeScript("folioc-killed", "kill -9 $$"));
  Expected<plan::Plan> p =
      tools::loadOrCompileModel("m.onnx", tools::ModelLoadOptions());
  ASSERT_FALSE(p);
  EXPECT_NE(p.status().message().find("killed by a signal"), std::string::npos)
      << p.status().message();
}

TEST(LoadModel, SuccessWithoutAPlanIsAnError) {
  // A folioc that exits 0 but writes nothing leaves the empty temporary
  // file: it is refused as a plan, and removed.
  ScopedEnv env("FOLIOC", writeScript("folioc-empty", "exit 0"));
  std::string tmp = ::testing::TempDir() + "/loadmodel-tmp";
  ::mkdir(tmp.c_str(), 0755);
  ScopedEnv dir("TMPDIR", tmp);
  Expected<plan::Plan> p =
      tools::loadOrCompileModel("m.onnx", tools::ModelLoadOptions());
  ASSERT_FALSE(p);
  EXPECT_EQ(::rmdir(tmp.c_str()), 0) << "the temporary plan was left behind";
}

TEST(LoadModel, RefusesOtherSuffixes) {
  Expected<plan::Plan> p =
      tools::loadOrCompileModel("model.bin", tools::ModelLoadOptions());
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().message(),
            "--model: 'model.bin' is neither an .onnx nor a .folio file");
}

} // namespace
