//===- Npy.cpp - Writing a float32 NumPy array ----------------------------===//

#include "tools/folio-run/Npy.h"

#include <cstdio>

namespace folio::run {

Status writeNpyF32(const std::string &path, const std::vector<float> &data,
                   const std::vector<int64_t> &shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    dims += ","; // a Python 1-tuple
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return Status::invalidArgument("--dump-logits: cannot write '" + path +
                                   "'");
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  uint16_t len = uint16_t(header.size());
  bool ok = std::fwrite(magic, 1, 8, f) == 8 &&
            std::fwrite(&len, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data.data(), 4, data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return Status::invalidArgument("--dump-logits: cannot write '" + path +
                                   "'");
  return Status::ok();
}

} // namespace folio::run
