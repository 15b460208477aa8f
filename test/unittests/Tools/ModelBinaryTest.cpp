//===- ModelBinaryTest.cpp - The payload of model binaries ----------------===//

#include "tools/common/ModelBinary.h"

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"
#include "runtime/Plan/PlanMapping.h"

#include <gtest/gtest.h>

#include <cstring>
#include <elf.h>
#include <fstream>
#include <sys/stat.h>

using namespace folio;
using namespace folio::tools;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/modelbinary-" + name;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// A stand-in for folio-model-stub: `size` bytes whose ELF header puts one
/// (null) section header at the very end, so the image is the whole file.
std::string writeFakeStub(const std::string &name, uint64_t size) {
  std::string bytes(size, '\0');
  Elf64_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 1;
  eh.e_shoff = size - sizeof(Elf64_Shdr);
  std::memcpy(bytes.data(), &eh, sizeof(eh));
  std::string path = tempPath(name);
  writeAll(path, bytes);
  return path;
}

const plan::Plan &llamaPlan() {
  static plan::Plan plan = [] {
    auto p = mlir::folio::compileONNXToPlan(
        std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
    if (!p) {
      ADD_FAILURE() << llvm::toString(p.takeError());
      return plan::Plan();
    }
    return std::move(*p);
  }();
  return plan;
}

ModelBinaryContents contents() {
  ModelBinaryContents c;
  c.planBytes = plan::serializePlan(llamaPlan());
  c.tokenizerJson = "{\"model\": {\"type\": \"BPE\"}}";
  c.tokenizerConfigJson = "{\"eos_token\": \"</s>\"}";
  c.manifest.name = "llama";
  c.manifest.source = "cached.onnx";
  c.manifest.target = "cpu";
  return c;
}

/// A model binary built from a 5000-byte fake stub (not page-aligned).
std::string writeBinary(const std::string &name) {
  std::string stub = writeFakeStub(name + ".stub", 5000);
  std::string out = tempPath(name);
  Status s = writeModelBinary(stub, contents(), out);
  EXPECT_TRUE(s) << s.message();
  return out;
}

TEST(ModelBinary, RoundTripMapsThePlanInPlace) {
  std::string path = writeBinary("roundtrip");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);

  Expected<EmbeddedModel> m = readEmbeddedModel(path);
  ASSERT_TRUE(m) << m.status().message();
  ModelBinaryContents want = contents();
  EXPECT_EQ(m->layout.stubBytes, 5000u);
  EXPECT_EQ(m->layout.payloadOffset, kPayloadAlignment);
  EXPECT_EQ(m->layout.plan.offset, 2 * kPayloadAlignment);
  EXPECT_EQ(m->layout.plan.bytes, want.planBytes.size());
  EXPECT_EQ(m->tokenizerJson, want.tokenizerJson);
  EXPECT_EQ(m->tokenizerConfigJson, want.tokenizerConfigJson);
  EXPECT_TRUE(m->chatTemplateJinja.empty());
  EXPECT_EQ(m->manifest.name, "llama");
  EXPECT_EQ(m->manifest.source, "cached.onnx");
  EXPECT_EQ(m->manifest.target, "cpu");
  // The stub's bytes are copied unchanged.
  EXPECT_EQ(readAll(path).substr(0, 5000), readAll(tempPath("roundtrip.stub")));

  Expected<plan::Plan> p = loadEmbeddedPlan(path, *m, {});
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(plan::serializePlan(*p), want.planBytes);
  // The weights are the file's pages, guarded like a .folio mapping.
  const char *mapped = plan::planMappingAt(p->blob.data());
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(std::string(mapped), path);
}

TEST(ModelBinary, ABareStubCarriesNoModel) {
  std::string stub = writeFakeStub("bare", 7000);
  Expected<ModelBinaryLayout> l = readModelBinaryLayout(stub);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.status().code(), StatusCode::NotFound);
  EXPECT_NE(l.status().message().find("carries no model"), std::string::npos)
      << l.status().message();
}

TEST(ModelBinary, RefusesEveryTruncation) {
  std::string path = writeBinary("whole");
  std::string bytes = readAll(path);
  std::string cut = tempPath("cut");
  // Just past the stub, inside the padding, the header, the plan, the
  // tokenizer, and one byte short.
  for (uint64_t size :
       {uint64_t(5001), uint64_t(kPayloadAlignment - 1),
        uint64_t(kPayloadAlignment + 100), 2 * kPayloadAlignment + 1000,
        uint64_t(bytes.size()) - 60, uint64_t(bytes.size()) - 1}) {
    writeAll(cut, bytes.substr(0, size));
    Expected<EmbeddedModel> m = readEmbeddedModel(cut);
    ASSERT_FALSE(m) << "cut at " << size;
    EXPECT_EQ(m.status().code(), StatusCode::InvalidArgument);
    std::string msg = m.status().message();
    EXPECT_TRUE(msg.find("truncated") != std::string::npos)
        << "cut at " << size << ": " << msg;
    EXPECT_NE(msg.find("byte offset"), std::string::npos) << msg;
  }
}

TEST(ModelBinary, RefusesAppendedBytes) {
  std::string path = writeBinary("appended");
  writeAll(path, readAll(path) + "extra");
  Expected<ModelBinaryLayout> l = readModelBinaryLayout(path);
  ASSERT_FALSE(l);
  EXPECT_NE(l.status().message().find("bytes appended"), std::string::npos)
      << l.status().message();
}

TEST(ModelBinary, ChecksumsCatchFlippedBytes) {
  std::string path = writeBinary("flipped");
  std::string bytes = readAll(path);
  Expected<ModelBinaryLayout> l = readModelBinaryLayout(path);
  ASSERT_TRUE(l) << l.status().message();
  struct Case {
    uint64_t offset;
    const char *want;
  } cases[] = {
      // A section offset in the header.
      {l->payloadOffset + 40, "fails its checksum"},
      {l->tokenizer.offset + 3, "the tokenizer at byte offset"},
      {l->tokenizerConfig.offset + 1, "the tokenizer config at byte offset"},
      {l->manifest.offset + 2, "the manifest at byte offset"},
      {l->payloadOffset, "lacks the FOLIOBIN magic"},
      {bytes.size() - 1, "the trailer at byte offset"},
  };
  std::string bad = tempPath("flipped.bad");
  for (const Case &c : cases) {
    std::string copy = bytes;
    copy[c.offset] ^= 0x04;
    writeAll(bad, copy);
    Expected<EmbeddedModel> m = readEmbeddedModel(bad);
    ASSERT_FALSE(m) << "flipped byte " << c.offset;
    EXPECT_NE(m.status().message().find(c.want), std::string::npos)
        << m.status().message();
  }
  // A weight: the plan's own checksum, with the plan's place named.
  std::string copy = bytes;
  copy[l->plan.offset + l->plan.bytes - 1] ^= 0x04;
  writeAll(bad, copy);
  Expected<EmbeddedModel> m = readEmbeddedModel(bad);
  ASSERT_TRUE(m) << m.status().message();
  Expected<plan::Plan> p = loadEmbeddedPlan(bad, *m, {});
  ASSERT_FALSE(p);
  EXPECT_NE(p.status().message().find("the plan at byte offset " +
                                      std::to_string(l->plan.offset)),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("weights section"), std::string::npos)
      << p.status().message();
}

TEST(ModelBinary, WriterRefusesWhatIsNoBareStub) {
  std::string notElf = tempPath("notelf");
  writeAll(notElf, std::string(4096, 'x'));
  Status s = writeModelBinary(notElf, contents(), tempPath("out1"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("is not an ELF executable"), std::string::npos)
      << s.message();

  std::string binary = writeBinary("twice");
  s = writeModelBinary(binary, contents(), tempPath("out2"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("bytes past its ELF image"), std::string::npos)
      << s.message();

  ModelBinaryContents empty = contents();
  empty.tokenizerJson.clear();
  s = writeModelBinary(writeFakeStub("stub3", 4096), empty, tempPath("out3"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("needs a plan and a tokenizer"),
            std::string::npos);
}

TEST(ModelBinary, ReadPlanAtNeedsAPageAlignedOffset) {
  std::string path = writeBinary("unaligned");
  Expected<EmbeddedModel> m = readEmbeddedModel(path);
  ASSERT_TRUE(m) << m.status().message();
  Expected<plan::Plan> p = plan::readPlanAt(path, m->layout.plan.offset + 64,
                                            m->layout.plan.bytes - 64);
  ASSERT_FALSE(p);
  EXPECT_NE(p.status().message().find("not a multiple of the page size"),
            std::string::npos)
      << p.status().message();
  p = plan::readPlanAt(path, m->layout.plan.offset,
                       m->layout.fileBytes); // past the end
  ASSERT_FALSE(p);
  EXPECT_NE(p.status().message().find("lies outside it"), std::string::npos)
      << p.status().message();
}

TEST(ModelBinary, ManifestRoundTripsAndRefusesUnknownKeys) {
  ModelManifest m{"name", "model.onnx", "sm_90a"};
  Expected<ModelManifest> back = ModelManifest::parse(m.serialize());
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->name, "name");
  EXPECT_EQ(back->source, "model.onnx");
  EXPECT_EQ(back->target, "sm_90a");
  Expected<ModelManifest> bad = ModelManifest::parse("name=x\ncolor=blue\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("unknown key 'color'"),
            std::string::npos);
  EXPECT_FALSE(ModelManifest::parse("source=x\n"));
  EXPECT_FALSE(ModelManifest::parse("name\n"));
}

} // namespace
