//===- ExternalDataTest.cpp - Weights in side files -----------------------===//

#include "test/unittests/Import/LoaderTestUtil.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

using namespace folio::onnx;
using namespace folio::onnx::testing;
using ::testing::HasSubstr;

namespace {

/// A model returning the sum of initializers `tensors` (names a, b, ...).
ModelProto modelWith(std::vector<TensorProto> tensors) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  std::vector<std::string> names;
  for (TensorProto &tensor : tensors) {
    names.push_back(tensor.name());
    addInitializer(graph, std::move(tensor));
  }
  addNode(graph, "Sum", names, {"out"}, "sum");
  addOutput(graph, "out", TensorProto::FLOAT, {});
  return proto;
}

std::string floats(std::initializer_list<float> values) {
  return toBytes<float>(values);
}

TEST(ExternalDataTest, ViewsTheMappedFileWithOffsets) {
  TempDir dir;
  // 3 bytes of padding make the second tensor unaligned on purpose.
  std::string data = floats({1, 2, 3, 4}) + "pad" + floats({5, 6});
  writeFile(dir.file("weights.bin"), data);
  std::unique_ptr<Model> model =
      loadOrFail(modelWith({makeExternalTensor("a", TensorProto::FLOAT, {4},
                                               "weights.bin", 0, 16),
                            makeExternalTensor("b", TensorProto::FLOAT, {2},
                                               "./weights.bin", 19)}),
                 dir);
  ASSERT_TRUE(model);
  const TensorData *a = model->getGraph().findInitializer("a");
  const TensorData *b = model->getGraph().findInitializer("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->getStorage(), TensorStorage::External);
  ASSERT_TRUE(a->getExternalLocation());
  EXPECT_EQ(a->getExternalLocation()->location, "weights.bin");
  EXPECT_EQ(a->getExternalLocation()->path, dir.file("weights.bin"));
  EXPECT_EQ(a->getExternalLocation()->offset, 0u);
  EXPECT_EQ(a->getExternalLocation()->length, 16u);
  EXPECT_EQ(b->getExternalLocation()->offset, 19u);
  EXPECT_EQ(b->getExternalLocation()->length, 8u);

  EXPECT_EQ(std::memcmp(a->getBytes().data(), data.data(), 16), 0);
  EXPECT_EQ(std::memcmp(b->getBytes().data(), data.data() + 19, 8), 0);
  // Both views lie in one mapping of the file: nothing was copied, and
  // "./weights.bin" and "weights.bin" share it.
  EXPECT_EQ(b->getBytes().data() - a->getBytes().data(), 19);
  EXPECT_EQ(model->getNumMappedFiles(), 1u);
}

TEST(ExternalDataTest, ViewsOutliveTheModel) {
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({9, 8}));
  std::optional<TensorData> copy;
  {
    std::unique_ptr<Model> model =
        loadOrFail(modelWith({makeExternalTensor("a", TensorProto::FLOAT, {2},
                                                 "w.bin", 0)}),
                   dir);
    ASSERT_TRUE(model);
    copy = *model->getGraph().findInitializer("a");
  }
  // The tensor shares ownership of the mapping.
  float values[2];
  std::memcpy(values, copy->getBytes().data(), sizeof(values));
  EXPECT_EQ(values[0], 9.0f);
  EXPECT_EQ(values[1], 8.0f);
}

TEST(ExternalDataTest, FilesInSubdirectoriesAndSeveralFiles) {
  TempDir dir;
  ASSERT_FALSE(llvm::sys::fs::create_directory(dir.file("shards")));
  writeFile(dir.file("shards/0.bin"), floats({1}));
  writeFile(dir.file("shards/1.bin"), floats({2}));
  std::unique_ptr<Model> model =
      loadOrFail(modelWith({makeExternalTensor("a", TensorProto::FLOAT, {1},
                                               "shards/0.bin", 0),
                            makeExternalTensor("b", TensorProto::FLOAT, {1},
                                               "shards/../shards/1.bin", 0),
                            // Windows exporters write backslashes.
                            makeExternalTensor("c", TensorProto::FLOAT, {1},
                                               "shards\\0.bin", 0)}),
                 dir);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->getNumMappedFiles(), 2u);
}

TEST(ExternalDataTest, LargeOffsetsInASparseFile) {
  // The >2 GiB case without writing 2 GiB: a sparse file whose only data
  // sits past the 4 GiB mark, as the last tensors of a big model do.
  TempDir dir;
  std::string path = dir.file("big.bin");
  const uint64_t offset = (uint64_t(1) << 32) + 12;
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, offset + 4096), 0);
  std::string data = floats({3.5f, -1.0f});
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), offset),
            ssize_t(data.size()));
  ::close(fd);

  std::unique_ptr<Model> model =
      loadOrFail(modelWith({makeExternalTensor("late", TensorProto::FLOAT, {2},
                                               "big.bin", offset, 8),
                            makeExternalTensor("early", TensorProto::FLOAT, {2},
                                               "big.bin", 0)}),
                 dir);
  ASSERT_TRUE(model);
  const TensorData *late = model->getGraph().findInitializer("late");
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->getExternalLocation()->offset, offset);
  EXPECT_EQ(std::memcmp(late->getBytes().data(), data.data(), 8), 0);
  const TensorData *early = model->getGraph().findInitializer("early");
  EXPECT_EQ(uint64_t(late->getBytes().data() - early->getBytes().data()),
            offset);

  std::string message = errorOf(loadProto(
      modelWith({makeExternalTensor("past", TensorProto::FLOAT, {1024},
                                    "big.bin", offset + 1024)}),
      dir));
  EXPECT_THAT(message, HasSubstr("initializer 'past': external data range "
                                 "[4294968332, 4294968332 + 4096) is "
                                 "outside file"));
  EXPECT_THAT(message, HasSubstr("of 4294971404 bytes"));
}

TEST(ExternalDataTest, BillionParameterModelIsMappedNotRead) {
  // Llama-3.2-1B's weight shapes in bf16 (2.5 GB) in one sparse file: the
  // load must not depend on the bytes being read or fitting in memory.
  const int64_t hidden = 2048, kv = 512, ffn = 8192, vocab = 128256;
  const int layers = 16;
  TempDir dir;
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  addInput(graph, "input_ids", TensorProto::INT64, {"batch", "seq"});
  uint64_t offset = 0;
  auto addWeight = [&](const std::string &name, std::vector<int64_t> dims) {
    int64_t elements = 1;
    for (int64_t dim : dims)
      elements *= dim;
    addInitializer(graph,
                   makeExternalTensor(name, TensorProto::BFLOAT16, dims,
                                      "model.onnx.data", offset, elements * 2));
    offset += elements * 2;
    return name;
  };
  std::string h = "h";
  addNode(graph, "Gather", {addWeight("embed", {vocab, hidden}), "input_ids"},
          {h});
  for (int l = 0; l < layers; ++l) {
    std::string p = "l" + std::to_string(l) + ".";
    for (auto [name, cols] : {std::pair<const char *, int64_t>{"q", hidden},
                              {"k", kv},
                              {"v", kv},
                              {"o", hidden},
                              {"gate", ffn},
                              {"up", ffn}}) {
      std::string out = p + name + ".out";
      addNode(graph, "MatMul", {h, addWeight(p + name, {hidden, cols})}, {out});
      h = out;
    }
    std::string out = p + "down.out";
    addNode(graph, "MatMul", {h, addWeight(p + "down", {ffn, hidden})}, {out});
    h = out;
  }
  addOutput(graph, h, TensorProto::BFLOAT16, {"batch", "seq", hidden});

  std::string data = dir.file("model.onnx.data");
  int fd = ::open(data.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, offset), 0);
  ::close(fd);

  std::unique_ptr<Model> model = loadOrFail(proto, dir);
  ASSERT_TRUE(model);
  EXPECT_GT(offset, uint64_t(1) << 31);
  EXPECT_EQ(model->getNumMappedFiles(), 1u);
  ASSERT_EQ(model->getGraph().getInitializers().size(), 1u + 7 * layers);
  uint64_t parameters = 0;
  for (const TensorData &tensor : model->getGraph().getInitializers()) {
    EXPECT_EQ(tensor.getStorage(), TensorStorage::External);
    parameters += tensor.getNumElements();
  }
  EXPECT_EQ(parameters * 2, offset);
  const TensorData *first = model->getGraph().findInitializer("embed");
  const TensorData *last = model->getGraph().findInitializer("l15.down");
  EXPECT_EQ(uint64_t(last->getBytes().end() - first->getBytes().begin()),
            offset);
}

TEST(ExternalDataTest, MissingFileIsAnError) {
  TempDir dir;
  std::string message =
      errorOf(loadProto(modelWith({makeExternalTensor("w", TensorProto::FLOAT,
                                                      {1}, "absent.bin", 0)}),
                        dir));
  EXPECT_THAT(message, HasSubstr("initializer 'w': cannot open external "
                                 "data file '" +
                                 dir.file("absent.bin") + "'"));
  EXPECT_THAT(message, HasSubstr("No such file"));
}

TEST(ExternalDataTest, RangePastTheEndIsAnError) {
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1, 2}));
  std::string message = errorOf(loadProto(
      modelWith({makeExternalTensor("w", TensorProto::FLOAT, {2}, "w.bin", 4)}),
      dir));
  EXPECT_THAT(message, HasSubstr("initializer 'w': external data range "
                                 "[4, 4 + 8) is outside file '" +
                                 dir.file("w.bin") + "' of 8 bytes"));

  // An offset beyond the end, and one large enough to overflow with the
  // length added.
  EXPECT_THAT(
      errorOf(loadProto(modelWith({makeExternalTensor("w", TensorProto::FLOAT,
                                                      {2}, "w.bin", 100)}),
                        dir)),
      HasSubstr("is outside file"));
  EXPECT_THAT(errorOf(loadProto(
                  modelWith({makeExternalTensor("w", TensorProto::FLOAT, {2},
                                                "w.bin", ~uint64_t(0) - 3)}),
                  dir)),
              HasSubstr("is outside file"));
}

TEST(ExternalDataTest, LengthMustMatchDims) {
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1, 2, 3}));
  EXPECT_THAT(
      errorOf(loadProto(modelWith({makeExternalTensor("w", TensorProto::FLOAT,
                                                      {2}, "w.bin", 0, 12)}),
                        dir)),
      HasSubstr("initializer 'w': external_data length 12 does not "
                "match dims [2] of float (8 bytes)"));
}

TEST(ExternalDataTest, AbsoluteAndEscapingPathsAreRefused) {
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1}));
  for (const char *location :
       {"/etc/passwd", "\\\\server\\share\\w.bin", "C:\\weights\\w.bin"}) {
    EXPECT_THAT(
        errorOf(loadProto(modelWith({makeExternalTensor("w", TensorProto::FLOAT,
                                                        {1}, location, 0)}),
                          dir)),
        HasSubstr("' is absolute; only paths relative to the model's "
                  "directory are accepted"))
        << location;
  }
  for (const char *location :
       {"../w.bin", "a/../../w.bin", "..\\w.bin", "./../x/w.bin"}) {
    EXPECT_THAT(
        errorOf(loadProto(modelWith({makeExternalTensor("w", TensorProto::FLOAT,
                                                        {1}, location, 0)}),
                          dir)),
        HasSubstr("leaves the model's directory"))
        << location;
  }
}

TEST(ExternalDataTest, MalformedEntriesAreRefused) {
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1}));
  auto load = [&](TensorProto tensor) {
    return errorOf(loadProto(modelWith({std::move(tensor)}), dir));
  };

  TensorProto noLocation =
      makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0);
  noLocation.mutable_external_data()->DeleteSubrange(0, 1);
  EXPECT_THAT(load(noLocation), HasSubstr("has no external_data 'location'"));

  TensorProto badOffset =
      makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0);
  badOffset.mutable_external_data(1)->set_value("-4");
  EXPECT_THAT(load(badOffset), HasSubstr("external_data offset '-4' is not a "
                                         "non-negative integer"));

  TensorProto hugeLength =
      makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0);
  auto *entry = hugeLength.add_external_data();
  entry->set_key("length");
  entry->set_value("99999999999999999999999");
  EXPECT_THAT(load(hugeLength), HasSubstr("is not a non-negative integer"));

  TensorProto twice =
      makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0);
  *twice.add_external_data() = twice.external_data(0);
  EXPECT_THAT(load(twice), HasSubstr("external_data key 'location' appears "
                                     "twice"));

  TensorProto alsoInline =
      makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0);
  alsoInline.set_raw_data(floats({1}));
  EXPECT_THAT(load(alsoInline),
              HasSubstr("has both external data and inline data"));

  EXPECT_THAT(load(makeExternalTensor("w", TensorProto::FLOAT, {1}, "", 0)),
              HasSubstr("external data location is empty"));
  EXPECT_THAT(load(makeExternalTensor("w", TensorProto::FLOAT, {1}, "./", 0)),
              HasSubstr("names the model's directory, not a file"));
  EXPECT_THAT(load(makeExternalTensor("w", TensorProto::FLOAT, {1},
                                      std::string("w.bin\0x", 7), 0)),
              HasSubstr("contains a NUL byte"));

  ASSERT_FALSE(llvm::sys::fs::create_directory(dir.file("sub")));
  EXPECT_THAT(load(makeExternalTensor("w", TensorProto::FLOAT, {1}, "sub", 0)),
              HasSubstr("is not a regular file"));
}

TEST(ExternalDataTest, ChecksumAndUnknownKeysAreIgnored) {
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1}));
  TensorProto tensor =
      makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0);
  for (const char *key : {"checksum", "basepath"}) {
    auto *entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value("whatever");
  }
  EXPECT_TRUE(loadOrFail(modelWith({tensor}), dir));
}

TEST(ExternalDataTest, BuffersWithoutADirectoryRefuseExternalData) {
  std::string bytes;
  ASSERT_TRUE(
      modelWith({makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0)})
          .SerializeToString(&bytes));
  std::string message =
      errorOf(loadModelFromBuffer(llvm::MemoryBufferRef(bytes, "mem")));
  EXPECT_THAT(message, HasSubstr("mem: initializer 'w': the tensor's data is "
                                 "in external file 'w.bin', but the model "
                                 "was loaded from memory"));

  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1}));
  llvm::Expected<std::unique_ptr<Model>> model =
      loadModelFromBuffer(llvm::MemoryBufferRef(bytes, "mem"), dir.path());
  EXPECT_TRUE(bool(model)) << llvm::toString(model.takeError());
}

TEST(ExternalDataTest, ModelInTheWorkingDirectory) {
  // A bare file name has no parent path: external data resolves against ".".
  TempDir dir;
  writeFile(dir.file("w.bin"), floats({1}));
  writeModel(
      modelWith({makeExternalTensor("w", TensorProto::FLOAT, {1}, "w.bin", 0)}),
      dir.file("m.onnx"));
  llvm::SmallString<256> previous;
  ASSERT_FALSE(llvm::sys::fs::current_path(previous));
  ASSERT_FALSE(llvm::sys::fs::set_current_path(dir.path()));
  llvm::Expected<std::unique_ptr<Model>> model = loadModel("m.onnx");
  ASSERT_FALSE(llvm::sys::fs::set_current_path(previous));
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_EQ(
      (*model)->getGraph().findInitializer("w")->getExternalLocation()->path,
      "./w.bin");
}

} // namespace
