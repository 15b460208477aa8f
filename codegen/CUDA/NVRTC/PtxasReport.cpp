//===- PtxasReport.cpp - Resource usage from ptxas's verbose log ----------===//

#include "codegen/CUDA/NVRTC/PtxasReport.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace folio::cuda {

namespace {

/// The integer just before `unit` in `line` ("688 bytes stack frame"), or
/// -1. Figures are separated by commas, so the number is the last token
/// before the unit within its comma-separated field.
int figureBefore(const std::string &line, const std::string &unit) {
  size_t at = line.find(unit);
  if (at == std::string::npos)
    return -1;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ')
    --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1])))
    --begin;
  if (begin == end)
    return -1;
  return std::atoi(line.substr(begin, end - begin).c_str());
}

/// The text between the first pair of single quotes after `from`.
std::string quoted(const std::string &line, size_t from) {
  size_t a = line.find('\'', from);
  if (a == std::string::npos)
    return {};
  size_t b = line.find('\'', a + 1);
  return b == std::string::npos ? std::string() : line.substr(a + 1, b - a - 1);
}

} // namespace

bool parsePtxasReport(const std::string &log, const std::string &kernel,
                      const std::string &arch, KernelResources &out) {
  static const std::string kEntry = "Compiling entry function";
  static const std::string kProperties = "Function properties for ";
  std::istringstream lines(log);
  std::string line;
  // Which function the next lines describe: the entry being compiled (its
  // "Used" line) and the function whose properties follow.
  bool inEntry = false, inProperties = false, found = false;
  KernelResources r;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (size_t at = line.find(kEntry); at != std::string::npos) {
      std::string name = quoted(line, at);
      size_t forAt = line.find(" for ", at);
      std::string lineArch =
          forAt == std::string::npos ? std::string() : quoted(line, forAt);
      inEntry = name == kernel && (arch.empty() || lineArch == arch);
      inProperties = false;
      found |= inEntry;
      continue;
    }
    if (size_t at = line.find(kProperties); at != std::string::npos) {
      std::string name = line.substr(at + kProperties.size());
      while (!name.empty() && name.back() == ' ')
        name.pop_back();
      // Properties of a device function called by the entry describe that
      // function, not the entry: only the entry's own count.
      inProperties = inEntry && name == kernel;
      continue;
    }
    if (inProperties && line.find("stack frame") != std::string::npos) {
      r.stackFrameBytes = figureBefore(line, "bytes stack frame");
      r.spillStoreBytes = figureBefore(line, "bytes spill stores");
      r.spillLoadBytes = figureBefore(line, "bytes spill loads");
      inProperties = false;
      continue;
    }
    if (inEntry && line.find("Used ") != std::string::npos &&
        line.find(" registers") != std::string::npos) {
      r.registers = figureBefore(line, "registers");
      r.barriers = figureBefore(line, "barriers");
      int smem = figureBefore(line, "bytes smem");
      r.sharedBytes = smem < 0 ? 0 : smem; // ptxas omits smem when none
      inEntry = false;
    }
  }
  if (found)
    out = r;
  return found;
}

} // namespace folio::cuda
