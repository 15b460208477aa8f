//===- ModelBinary.cpp - The model embedded in a serving binary -----------===//

#include "tools/common/ModelBinary.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace folio::tools {
namespace {

/// An open file, closed on scope exit.
class File {
public:
  explicit File(const std::string &path)
      : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd >= 0)
      ::close(fd);
  }
  File(const File &) = delete;
  File &operator=(const File &) = delete;
  bool isOpen() const { return fd >= 0; }
  uint64_t size() const {
    struct stat st;
    return ::fstat(fd, &st) == 0 && st.st_size > 0 ? uint64_t(st.st_size) : 0;
  }
  /// Reads exactly `n` bytes at `offset`.
  bool read(uint64_t offset, void *out, uint64_t n) const {
    auto *p = static_cast<char *>(out);
    while (n > 0) {
      ssize_t got = ::pread(fd, p, n, off_t(offset));
      if (got <= 0)
        return false;
      p += got;
      offset += uint64_t(got);
      n -= uint64_t(got);
    }
    return true;
  }

private:
  int fd;
};

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v; // Little-endian, as the format.
}

template <typename T> void store(std::string &out, T v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

Status notFoundFile(const std::string &path) {
  return Status::notFound("cannot open '" + path +
                          "': " + std::strerror(errno));
}

/// The fields of the payload header, in order, after magic and version.
constexpr uint64_t kSectionsOffset = 32;
constexpr int kNumSections = 5;
constexpr uint64_t kHeaderHashOffset = kSectionsOffset + 24 * kNumSections;
static_assert(kHeaderHashOffset + 8 == kPayloadHeaderBytes);

} // namespace

std::string ModelManifest::serialize() const {
  return "name=" + name + "\nsource=" + source + "\ntarget=" + target + "\n";
}

Expected<ModelManifest> ModelManifest::parse(const std::string &text) {
  ModelManifest m;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(
        start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      return Status::invalidArgument("manifest: the line '" + line +
                                     "' is not key=value");
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "name")
      m.name = value;
    else if (key == "source")
      m.source = value;
    else if (key == "target")
      m.target = value;
    else
      return Status::invalidArgument("manifest: unknown key '" + key +
                                     "' (known: name, source, target)");
  }
  if (m.name.empty())
    return Status::invalidArgument("manifest: no model name");
  return m;
}

Expected<uint64_t> elfImageBytes(const std::string &path) {
  File f(path);
  if (!f.isOpen())
    return notFoundFile(path);
  uint64_t size = f.size();
  Elf64_Ehdr eh;
  if (size < sizeof(eh) || !f.read(0, &eh, sizeof(eh)) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return Status::invalidArgument("'" + path + "' is not an ELF executable");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return Status::invalidArgument("'" + path +
                                   "' is not a 64-bit little-endian ELF "
                                   "file; model binaries are built from one");
  std::string incomplete = "'" + path + "' is not a complete ELF file: ";
  uint64_t end = sizeof(eh);
  auto cover = [&](uint64_t offset, uint64_t bytes, const char *what) {
    if (offset > size || bytes > size - offset)
      return Status::invalidArgument(
          incomplete + what + " at byte offset " + std::to_string(offset) +
          " (" + std::to_string(bytes) + " bytes) lies past its end (" +
          std::to_string(size) + " bytes)");
    end = std::max(end, offset + bytes);
    return Status::ok();
  };
  if (Status s = cover(eh.e_phoff, uint64_t(eh.e_phnum) * eh.e_phentsize,
                       "the program header table");
      !s)
    return s;
  if (Status s = cover(eh.e_shoff, uint64_t(eh.e_shnum) * eh.e_shentsize,
                       "the section header table");
      !s)
    return s;
  if (eh.e_phnum && eh.e_phentsize < sizeof(Elf64_Phdr))
    return Status::invalidArgument(incomplete + "short program headers");
  if (eh.e_shnum && eh.e_shentsize < sizeof(Elf64_Shdr))
    return Status::invalidArgument(incomplete + "short section headers");
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!f.read(eh.e_phoff + uint64_t(i) * eh.e_phentsize, &ph, sizeof(ph)))
      return Status::invalidArgument(incomplete + "unreadable program header");
    if (Status s = cover(ph.p_offset, ph.p_filesz, "a segment"); !s)
      return s;
  }
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!f.read(eh.e_shoff + uint64_t(i) * eh.e_shentsize, &sh, sizeof(sh)))
      return Status::invalidArgument(incomplete + "unreadable section header");
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
      continue;
    if (Status s = cover(sh.sh_offset, sh.sh_size, "a section"); !s)
      return s;
  }
  return end;
}

Expected<ModelBinaryLayout> readModelBinaryLayout(const std::string &path) {
  Expected<uint64_t> image = elfImageBytes(path);
  if (!image)
    return image.status();
  File f(path);
  if (!f.isOpen())
    return notFoundFile(path);
  uint64_t size = f.size();
  std::string where = "'" + path + "'";
  if (size == *image)
    return Status::notFound(
        where + " carries no model: it is the serving stub that folioc "
                "--emit=binary copies (build a model binary with folioc "
                "model.onnx --tokenizer tokenizer.json --emit=binary -o NAME)");
  ModelBinaryLayout l;
  l.stubBytes = *image;
  l.payloadOffset = alignUp(*image, kPayloadAlignment);
  l.fileBytes = size;
  std::string header = where + ": the model payload header at byte offset " +
                       std::to_string(l.payloadOffset);
  if (size < l.payloadOffset + kPayloadHeaderBytes)
    return Status::invalidArgument(
        header + " is cut off: the file ends at byte " + std::to_string(size) +
        " (truncated; rebuild or re-copy the binary)");
  uint8_t h[kPayloadHeaderBytes];
  if (!f.read(l.payloadOffset, h, sizeof(h)))
    return Status::invalidArgument(header + " cannot be read");
  if (std::memcmp(h, kPayloadMagic, 8) != 0)
    return Status::invalidArgument(
        header + " lacks the FOLIOBIN magic: the " +
        std::to_string(size - *image) +
        " bytes after the executable's image are not a Folio model");
  uint32_t version = load<uint32_t>(h + 8);
  if (version != kModelBinaryVersion)
    return Status::invalidArgument(
        header + " has version " + std::to_string(version) +
        "; this runtime reads version " + std::to_string(kModelBinaryVersion) +
        " (rebuild the binary with this folioc)");
  if (load<uint32_t>(h + 12) != kPayloadHeaderBytes ||
      load<uint64_t>(h + 16) != l.stubBytes)
    return Status::invalidArgument(
        header +
        " disagrees with the executable: it says the image ends at "
        "byte " +
        std::to_string(load<uint64_t>(h + 16)) + ", the ELF headers say " +
        std::to_string(l.stubBytes));
  uint64_t wantHash = load<uint64_t>(h + kHeaderHashOffset);
  uint64_t gotHash = plan::planHash(h, kHeaderHashOffset);
  if (wantHash != gotHash)
    return Status::invalidArgument(header +
                                   " fails its checksum; the file is corrupt "
                                   "(rebuild or re-copy the binary)");
  uint64_t declared = load<uint64_t>(h + 24);
  if (declared != size)
    return Status::invalidArgument(
        where + " is " + std::to_string(size) +
        " bytes but its payload header (byte offset " +
        std::to_string(l.payloadOffset) + ") says " + std::to_string(declared) +
        (size < declared ? " (truncated" : " (bytes appended") +
        "; rebuild or re-copy the binary)");
  ModelBinarySection *sections[kNumSections] = {
      &l.plan, &l.tokenizer, &l.tokenizerConfig, &l.chatTemplate, &l.manifest};
  const char *names[kNumSections] = {"plan", "tokenizer", "tokenizer config",
                                     "chat template", "manifest"};
  // Back to back from the aligned plan to the trailer.
  uint64_t next = l.payloadOffset + kPayloadAlignment;
  for (int i = 0; i < kNumSections; ++i) {
    const uint8_t *p = h + kSectionsOffset + 24 * i;
    ModelBinarySection &s = *sections[i];
    s = {load<uint64_t>(p), load<uint64_t>(p + 8), load<uint64_t>(p + 16)};
    if (s.offset != next || s.bytes > size - kTrailerBytes - s.offset)
      return Status::invalidArgument(
          header + " puts the " + names[i] + " at byte offset " +
          std::to_string(s.offset) + " (" + std::to_string(s.bytes) +
          " bytes); it must start at byte " + std::to_string(next) +
          " and end before the trailer at byte " +
          std::to_string(size - kTrailerBytes));
    next = s.offset + s.bytes;
  }
  if (l.plan.bytes == 0 || l.tokenizer.bytes == 0 || l.manifest.bytes == 0)
    return Status::invalidArgument(header +
                                   " has an empty plan, tokenizer or manifest");
  if (next != size - kTrailerBytes)
    return Status::invalidArgument(header + " ends its sections at byte " +
                                   std::to_string(next) +
                                   ", not at the trailer (byte " +
                                   std::to_string(size - kTrailerBytes) + ")");
  uint8_t t[kTrailerBytes];
  if (!f.read(size - kTrailerBytes, t, sizeof(t)) ||
      std::memcmp(t + 8, kTrailerMagic, 8) != 0 ||
      load<uint64_t>(t) != l.payloadOffset)
    return Status::invalidArgument(
        where + ": the trailer at byte offset " +
        std::to_string(size - kTrailerBytes) +
        " is not FOLIOEND with the payload's offset; the file is corrupt");
  return l;
}

Expected<EmbeddedModel> readEmbeddedModel(const std::string &path) {
  Expected<ModelBinaryLayout> layout = readModelBinaryLayout(path);
  if (!layout)
    return layout.status();
  EmbeddedModel m;
  m.layout = *layout;
  File f(path);
  if (!f.isOpen())
    return notFoundFile(path);
  auto section = [&](const ModelBinarySection &s, const char *name,
                     std::string &out) {
    out.resize(s.bytes);
    if (!f.read(s.offset, out.data(), s.bytes))
      return Status::invalidArgument("'" + path + "': cannot read the " + name +
                                     " at byte offset " +
                                     std::to_string(s.offset));
    if (plan::planHash(out.data(), out.size()) != s.hash)
      return Status::invalidArgument(
          "'" + path + "': the " + name + " at byte offset " +
          std::to_string(s.offset) + " (" + std::to_string(s.bytes) +
          " bytes) fails its checksum; the file is corrupt (rebuild or "
          "re-copy the binary)");
    return Status::ok();
  };
  std::string manifest;
  if (Status s = section(m.layout.tokenizer, "tokenizer", m.tokenizerJson); !s)
    return s;
  if (Status s = section(m.layout.tokenizerConfig, "tokenizer config",
                         m.tokenizerConfigJson);
      !s)
    return s;
  if (Status s =
          section(m.layout.chatTemplate, "chat template", m.chatTemplateJinja);
      !s)
    return s;
  if (Status s = section(m.layout.manifest, "manifest", manifest); !s)
    return s;
  Expected<ModelManifest> parsed = ModelManifest::parse(manifest);
  if (!parsed)
    return Status::invalidArgument("'" + path +
                                   "': " + parsed.status().message());
  m.manifest = std::move(*parsed);
  return m;
}

Expected<plan::Plan> loadEmbeddedPlan(const std::string &path,
                                      const EmbeddedModel &model,
                                      const plan::ReadPlanOptions &options) {
  return plan::readPlanAt(path, model.layout.plan.offset,
                          model.layout.plan.bytes, options);
}

Status writeModelBinary(const std::string &stubPath,
                        const ModelBinaryContents &contents,
                        const std::string &outPath) {
  Expected<uint64_t> image = elfImageBytes(stubPath);
  if (!image)
    return Status::invalidArgument("runtime stub: " + image.status().message());
  File stub(stubPath);
  if (!stub.isOpen())
    return notFoundFile(stubPath);
  uint64_t stubSize = stub.size();
  if (stubSize != *image)
    return Status::invalidArgument(
        "runtime stub '" + stubPath + "' has " +
        std::to_string(stubSize - *image) +
        " bytes past its ELF image (a model binary already?); pass the bare "
        "folio-model-stub");
  if (contents.planBytes.empty() || contents.tokenizerJson.empty())
    return Status::invalidArgument("a model binary needs a plan and a "
                                   "tokenizer");
  std::string manifest = contents.manifest.serialize();
  std::string out(stubSize, '\0');
  if (!stub.read(0, out.data(), stubSize))
    return Status::invalidArgument("cannot read the runtime stub '" + stubPath +
                                   "'");
  uint64_t payload = alignUp(stubSize, kPayloadAlignment);
  uint64_t planOffset = payload + kPayloadAlignment;
  const std::string *bodies[kNumSections] = {
      &contents.planBytes, &contents.tokenizerJson,
      &contents.tokenizerConfigJson, &contents.chatTemplateJinja, &manifest};
  uint64_t fileBytes = planOffset + kTrailerBytes;
  for (const std::string *b : bodies)
    fileBytes += b->size();
  std::string header(kPayloadMagic, 8);
  store<uint32_t>(header, kModelBinaryVersion);
  store<uint32_t>(header, uint32_t(kPayloadHeaderBytes));
  store<uint64_t>(header, stubSize);
  store<uint64_t>(header, fileBytes);
  uint64_t offset = planOffset;
  for (int i = 0; i < kNumSections; ++i) {
    store<uint64_t>(header, offset);
    store<uint64_t>(header, bodies[i]->size());
    store<uint64_t>(
        header,
        i == 0 ? 0 : plan::planHash(bodies[i]->data(), bodies[i]->size()));
    offset += bodies[i]->size();
  }
  store<uint64_t>(header, plan::planHash(header.data(), header.size()));
  out.resize(payload, '\0');
  out += header;
  out.resize(planOffset, '\0');
  for (const std::string *b : bodies)
    out += *b;
  store<uint64_t>(out, payload);
  out.append(kTrailerMagic, 8);

  std::string tmp = outPath + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (fd < 0)
    return Status::invalidArgument("cannot write '" + outPath +
                                   "': " + std::strerror(errno));
  bool ok = true;
  for (size_t done = 0; ok && done < out.size();) {
    ssize_t w = ::write(fd, out.data() + done, out.size() - done);
    ok = w > 0;
    done += ok ? size_t(w) : 0;
  }
  // The umask may have narrowed the mode given to open.
  ok = ::fchmod(fd, 0755) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), outPath.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::invalidArgument("cannot write '" + outPath + "': " + why);
  }
  return Status::ok();
}

} // namespace folio::tools
