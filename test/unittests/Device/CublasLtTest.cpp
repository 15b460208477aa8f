//===- CublasLtTest.cpp - GEMMs through cuBLASLt, on the fake libraries ---===//
//
// CublasLt's bf16 linear against a double-precision reference, through the
// fake driver (FakeCudaDevice.cpp: host memory) and the fake cuBLASLt
// (FakeCublasLt.cpp: the documented column-major semantics, refusing
// malformed set-ups): the layouts, transposes, bias epilogue and the
// descriptors cached per shape. On a GPU, tools/gpu-check.sh runs the same
// GEMM through the real library against the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device/CublasLt.h"

#include "codegen/CPU/DType.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

using namespace folio;
using namespace folio::device;

namespace {

class CublasLtFake : public ::testing::Test {
protected:
  void SetUp() override {
    ::setenv("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA_DEVICE, 1);
    ::setenv("FOLIO_LIBCUBLASLT_PATH", FOLIO_FAKE_CUBLASLT, 1);
    Expected<std::unique_ptr<CudaDevice>> d = CudaDevice::open(0);
    ASSERT_TRUE(bool(d)) << d.status().message();
    dev = std::move(*d);
  }
  void TearDown() override {
    ::unsetenv("FOLIO_LIBCUDA_PATH");
    ::unsetenv("FOLIO_LIBCUBLASLT_PATH");
  }
  std::unique_ptr<CudaDevice> dev;
};

std::vector<uint16_t> toHalf(const std::vector<float> &v, CublasLt::Half t) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = t == CublasLt::Half::F16 ? cpu::floatToF16(v[i])
                                      : cpu::floatToBf16(v[i]);
  return out;
}

float fromHalf(uint16_t h, CublasLt::Half t) {
  return t == CublasLt::Half::F16 ? cpu::f16ToFloat(h) : cpu::bf16ToFloat(h);
}

TEST_F(CublasLtFake, LinearMatchesTheReference) {
  Expected<std::unique_ptr<CublasLt>> lt = CublasLt::open(*dev);
  ASSERT_TRUE(bool(lt)) << lt.status().message();
  EXPECT_EQ((*lt)->version(), 130100u);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto [m, n, k, type] : {std::tuple{1, 37, 70, CublasLt::Half::BF16},
                               std::tuple{5, 16, 64, CublasLt::Half::BF16},
                               std::tuple{9, 3, 1, CublasLt::Half::BF16},
                               std::tuple{5, 16, 64, CublasLt::Half::F16},
                               std::tuple{3, 7, 33, CublasLt::Half::F16}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" +
                 std::to_string(k) +
                 (type == CublasLt::Half::F16 ? " f16" : " bf16"));
    std::vector<float> w(size_t(n * k)), x(size_t(m * k));
    std::vector<float> bias(static_cast<size_t>(n));
    for (float &e : w)
      e = normal(rng);
    for (float &e : x)
      e = normal(rng);
    for (float &e : bias)
      e = normal(rng);
    std::vector<uint16_t> wb = toHalf(w, type), xb = toHalf(x, type);
    // Subnormal halves too (f16 only: bf16 keeps f32's range).
    if (type == CublasLt::Half::F16)
      xb[0] = 0x0003, wb[0] = 0x8201;
    Expected<DeviceBuffer> dw = dev->upload(wb.data(), wb.size() * 2, "w"),
                           dx = dev->upload(xb.data(), xb.size() * 2, "x"),
                           db = dev->upload(bias.data(), bias.size() * 4, "b"),
                           dy = dev->allocate(size_t(m * n) * 4, "y");
    ASSERT_TRUE(dw && dx && db && dy);
    for (bool withBias : {false, true}) {
      Status s = (*lt)->linear(type, dx->ptr(), dw->ptr(),
                               withBias ? db->ptr() : 0, dy->ptr(), m, n, k);
      ASSERT_TRUE(bool(s)) << s.message();
      std::vector<float> y(size_t(m * n));
      ASSERT_TRUE(bool(dev->copyToHost(y.data(), *dy, 0, y.size() * 4)));
      for (int i = 0; i < m; ++i)
        for (int r = 0; r < n; ++r) {
          double want = withBias ? bias[size_t(r)] : 0.0, mag = 0;
          for (int c = 0; c < k; ++c) {
            double p = double(fromHalf(xb[size_t(i * k + c)], type)) *
                       fromHalf(wb[size_t(r * k + c)], type);
            want += p;
            mag += std::fabs(p);
          }
          EXPECT_NEAR(y[size_t(i * n + r)], want, 2e-6 * k * mag + 1e-6)
              << "row " << i << ", output " << r
              << (withBias ? " with bias" : "");
        }
    }
  }
}

TEST_F(CublasLtFake, ACachedShapeTakesEachCallsBias) {
  // The same shape twice, each call with its own bias: the second must
  // not keep the first one's pointer.
  Expected<std::unique_ptr<CublasLt>> lt = CublasLt::open(*dev);
  ASSERT_TRUE(bool(lt));
  const int m = 2, n = 3, k = 4;
  std::vector<uint16_t> w(size_t(n * k), 0), x(size_t(m * k), 0);
  std::vector<float> b1 = {1, 2, 3}, b2 = {10, 20, 30};
  Expected<DeviceBuffer> dw = dev->upload(w.data(), w.size() * 2, "w"),
                         dx = dev->upload(x.data(), x.size() * 2, "x"),
                         d1 = dev->upload(b1.data(), 12, "b1"),
                         d2 = dev->upload(b2.data(), 12, "b2"),
                         dy = dev->allocate(size_t(m * n) * 4, "y");
  ASSERT_TRUE(dw && dx && d1 && d2 && dy);
  for (const auto &[bias, want] :
       {std::pair{&*d1, &b1}, std::pair{&*d2, &b2}, std::pair{&*d1, &b1}}) {
    ASSERT_TRUE(bool((*lt)->linearBf16(dx->ptr(), dw->ptr(), bias->ptr(),
                                       dy->ptr(), m, n, k)));
    std::vector<float> y(size_t(m * n));
    ASSERT_TRUE(bool(dev->copyToHost(y.data(), *dy, 0, y.size() * 4)));
    for (int i = 0; i < m; ++i)
      for (int r = 0; r < n; ++r)
        EXPECT_EQ(y[size_t(i * n + r)], (*want)[size_t(r)]);
  }
}

TEST_F(CublasLtFake, RefusesWhatItCannotRun) {
  Expected<std::unique_ptr<CublasLt>> lt = CublasLt::open(*dev);
  ASSERT_TRUE(bool(lt));
  Status s = (*lt)->linearBf16(0, 0, 0, 0, 0, 4, 4);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("m, n and k must be at least 1, not 0, 4, 4"),
            std::string::npos)
      << s.message();

  ::setenv("FOLIO_LIBCUBLASLT_PATH", "/nonexistent/libcublasLt.so.13", 1);
  Expected<std::unique_ptr<CublasLt>> none = CublasLt::open(*dev);
  ASSERT_FALSE(bool(none));
  EXPECT_NE(none.status().message().find(
                "no cuBLASLt: cannot load /nonexistent/libcublasLt.so.13"),
            std::string::npos)
      << none.status().message();
  // The fake driver is a library, but not cuBLASLt.
  ::setenv("FOLIO_LIBCUBLASLT_PATH", FOLIO_FAKE_CUDA_DEVICE, 1);
  Expected<std::unique_ptr<CublasLt>> wrong = CublasLt::open(*dev);
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(wrong.status().message().find("lacks the entry points "
                                          "cublasLtCreate"),
            std::string::npos)
      << wrong.status().message();
}

} // namespace
