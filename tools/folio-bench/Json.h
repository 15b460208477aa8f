//===- Json.h - A minimal JSON writer for folio-bench -----------*- C++ -*-===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_JSON_H
#define FOLIO_TOOLS_FOLIO_BENCH_JSON_H

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace folio::bench {

/// Builds one JSON value as text; callers nest objects and arrays in order.
class Json {
public:
  Json &beginObject() { return open('{'); }
  Json &endObject() { return close('}'); }
  Json &beginArray() { return open('['); }
  Json &endArray() { return close(']'); }
  Json &key(const std::string &k) {
    comma();
    text += quote(k) + ":";
    needComma = false;
    return *this;
  }
  Json &value(double v) {
    char buf[32];
    if (!std::isfinite(v))
      return raw("null");
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return raw(buf);
  }
  Json &value(int64_t v) { return raw(std::to_string(v)); }
  Json &value(int v) { return value(int64_t(v)); }
  Json &value(bool b) { return raw(b ? "true" : "false"); }
  Json &null() { return raw("null"); }
  Json &value(const std::string &s) { return raw(quote(s)); }
  Json &value(const char *s) { return value(std::string(s)); }
  Json &values(const std::vector<double> &v) {
    beginArray();
    for (double x : v)
      value(x);
    return endArray();
  }
  template <typename T> Json &field(const std::string &k, const T &v) {
    key(k);
    return value(v);
  }
  const std::string &str() const { return text; }

private:
  Json &raw(const std::string &s) {
    comma();
    text += s;
    needComma = true;
    return *this;
  }
  Json &open(char c) {
    comma();
    text += c;
    needComma = false;
    return *this;
  }
  Json &close(char c) {
    text += c;
    needComma = true;
    return *this;
  }
  void comma() {
    if (needComma)
      text += ',';
  }
  static std::string quote(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        // Control characters (a newline in a server's error message).
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
        out += buf;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  std::string text;
  bool needComma = false;
};

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_JSON_H
