//===- Fixtures.h - Zoo references for the parity tests ---------*- C++ -*-===//
//
// Reads models/zoo/fixtures-for-run (written by convert_refs.py from the
// ONNX Runtime .ref.npz files): prompts, reference greedy tokens and the
// step logits [cases, 16, vocab].
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CORE_FIXTURES_H
#define FOLIO_TEST_UNITTESTS_CORE_FIXTURES_H

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace folio::testing {

struct RefCase {
  std::string name;
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;
};

struct RefFixture {
  std::vector<RefCase> cases;
  std::vector<float> logits; ///< [cases, steps, vocab]
  int64_t steps = 16;
  int64_t vocab = 0;
  bool ok = false;
  const float *row(size_t c, int64_t step) const {
    return logits.data() + (c * size_t(steps) + size_t(step)) * size_t(vocab);
  }
};

inline std::vector<int32_t> parseList(const std::string &s) {
  std::vector<int32_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    v.push_back(std::stoi(item));
  return v;
}

inline std::string zooPath(const std::string &rel) {
  return std::string(FOLIO_SOURCE_DIR) + "/models/zoo/" + rel;
}

inline RefFixture loadFixture(const std::string &arch,
                              const std::string &form) {
  RefFixture f;
  std::string base = zooPath("fixtures-for-run/" + arch + "." + form);
  std::ifstream txt(base + ".txt");
  std::string name, prompt, tokens;
  while (txt >> name >> prompt >> tokens)
    f.cases.push_back({name, parseList(prompt), parseList(tokens)});
  std::ifstream bin(base + ".f32", std::ios::binary | std::ios::ate);
  if (f.cases.empty() || !bin)
    return f;
  size_t bytes = size_t(bin.tellg());
  bin.seekg(0);
  f.logits.resize(bytes / 4);
  bin.read(reinterpret_cast<char *>(f.logits.data()), std::streamsize(bytes));
  f.steps = int64_t(f.cases[0].tokens.size());
  f.vocab = int64_t(f.logits.size()) / (int64_t(f.cases.size()) * f.steps);
  f.ok = true;
  return f;
}

} // namespace folio::testing

#endif // FOLIO_TEST_UNITTESTS_CORE_FIXTURES_H
