//===- DeviceKernelTest.cpp - Generated kernels through the driver API ----===//
//
// The generated kernels run the way an executor runs them: NVRTC compiles
// their sources for the device's arch, runtime/Device's CudaDevice loads
// the cubin (or the PTX), uploads the inputs, launches with the argument
// struct and reads the results back, which must match the CPU kernels.
//
// Without a GPU (the default) the driver is the fake one
// (test/unittests/Device/FakeCudaDevice.cpp): host memory, and launches
// that run the same kernels compiled as host C++ against the emulation;
// cuBLASLt is FakeCublasLt.cpp, its documented semantics on the host.
// That checks everything on the host side of a launch: sizes, pointers,
// argument structs, module and kernel lookup, errors. With
// FOLIO_GPU_TESTS=1 (tools/gpu-check.sh) the real driver and GPU run them.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

// Generated at build time: the kernels and their tables.
#include <KVWriteTestKernels.inc>
#include <LinearTestKernels.inc>
#include <PagedDecodeTestKernels.inc>
#include <PagedPrefillTestKernels.inc>
#include <RowTestKernels.inc>

#include "codegen/CPU/KVCache.h"
#include "codegen/CUDA/Emitter.h"
#include "codegen/CUDA/NVRTC/Nvrtc.h"
#include "runtime/Device/CudaDevice.h"
#include "test/unittests/CUDA/FakeDriver.h"
#include "test/unittests/CUDA/LinearCheck.h"
#include "test/unittests/CUDA/TestVariants.h"
#include "tools/folio-gpu-bench/GpuBench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <tuple>

namespace folio::cuda::test {
namespace {

using cpu::DType;
using device::CudaDevice;
using device::DeviceBuffer;

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    Status s_ = (expr);                                                        \
    ASSERT_TRUE(bool(s_)) << s_.message();                                     \
  } while (0)

bool realGpu() {
  const char *v = std::getenv("FOLIO_GPU_TESTS");
  return v && std::string(v) == "1";
}

/// Registers every kernel of a generated {key, kernel} table by the name
/// of its spec.
template <typename Args, typename Spec, typename Table>
void registerTable(RegisterFn reg, const std::vector<Spec> &specs,
                   const Table &table) {
  for (const Spec &s : specs)
    for (const auto &k : table)
      if (canonicalKey(s) == k.key)
        reg(kernelName(s).c_str(), &emulate<Args>, sizeof(Args),
            reinterpret_cast<void *>(k.kernel));
}

/// A linear "kernel" that writes NaN to every output.
void writesNaN(folio_cuda::LinearArgs a) {
  for (long long i = 0; i < a.m * a.n; ++i)
    a.y[i] = std::nanf("");
}

/// The fake driver's registration, to swap a kernel in a test (null on a
/// GPU).
RegisterFn fakeRegister = nullptr;

/// The device the tests run on: the fake driver with every test kernel
/// registered, or the GPU. Opened once per process.
CudaDevice *testDevice(std::string &error) {
  static std::unique_ptr<CudaDevice> device;
  static std::string openError;
  static bool opened = false;
  if (!opened) {
    opened = true;
    if (!realGpu()) {
      RegisterFn reg =
          useFakeDriver(FOLIO_FAKE_CUDA_DEVICE, FOLIO_FAKE_CUBLASLT, openError);
      if (!reg) {
        error = openError;
        return nullptr;
      }
      for (const LinearSpec &s : linearVariants())
        for (const FolioTestLinear &k : kFolioTestLinear)
          if (canonicalKey(s) == k.key)
            reg(kernelName(s).c_str(), &emulate<folio_cuda::LinearArgs>,
                sizeof(folio_cuda::LinearArgs),
                reinterpret_cast<void *>(k.kernel));
      for (const PagedDecodeSpec &s : pagedDecodeVariants())
        for (const FolioTestPagedDecode &k : kFolioTestPagedDecode)
          if (canonicalKey(s) == k.key) {
            reg(kernelName(s).c_str(), &emulate<folio_cuda::PagedDecodeArgs>,
                sizeof(folio_cuda::PagedDecodeArgs),
                reinterpret_cast<void *>(k.main));
            reg(combineKernelName(s).c_str(),
                &emulate<folio_cuda::PagedDecodeArgs>,
                sizeof(folio_cuda::PagedDecodeArgs),
                reinterpret_cast<void *>(k.combine));
          }
      for (const PagedPrefillSpec &s : pagedPrefillVariants())
        for (const FolioTestPagedPrefill &k : kFolioTestPagedPrefill)
          if (canonicalKey(s) == k.key)
            reg(kernelName(s).c_str(), &emulate<folio_cuda::PagedPrefillArgs>,
                sizeof(folio_cuda::PagedPrefillArgs),
                reinterpret_cast<void *>(k.kernel));
      for (const KVWriteSpec &s : kvWriteVariants())
        for (const FolioTestKVWrite &k : kFolioTestKVWrite)
          if (canonicalKey(s) == k.key)
            reg(kernelName(s).c_str(), &emulate<folio_cuda::KVWriteArgs>,
                sizeof(folio_cuda::KVWriteArgs),
                reinterpret_cast<void *>(k.kernel));
      registerTable<folio_cuda::RowArgs>(reg, rowKernelVariants(),
                                         kFolioTestRow);
      registerTable<folio_cuda::RotaryArgs>(reg, rotaryVariants(),
                                            kFolioTestRotary);
      registerTable<folio_cuda::GatherArgs>(reg, gatherVariants(),
                                            kFolioTestGather);
      registerTable<folio_cuda::SampleArgs>(reg, sampleVariants(),
                                            kFolioTestSample);
      registerTable<folio_cuda::CastArgs>(reg, castVariants(), kFolioTestCast);
      registerTable<folio_cuda::LinearArgs>(reg, linearFormVariants(),
                                            kFolioTestDequant);
      fakeRegister = reg;
    }
    Expected<std::unique_ptr<CudaDevice>> d = CudaDevice::open(0);
    if (d)
      device = std::move(*d);
    else
      openError = d.status().message();
  }
  error = openError;
  return device.get();
}

/// The kernels' sources compiled for the device as one module, as the GPU
/// check loads them.
void compileForDevice(const CudaDevice &dev,
                      const std::vector<GeneratedKernel> &kernels,
                      gpubench::LoadedKernels &out) {
  ASSERT_OK(gpubench::loadKernels(dev, kernels, out));
}

class CudaDeviceKernels : public ::testing::Test {
protected:
  void SetUp() override {
    if (!nvrtcAvailable())
      GTEST_SKIP() << "this build has no CUDA toolkit";
    std::string error;
    dev = testDevice(error);
    ASSERT_NE(dev, nullptr) << error;
  }

  template <typename T>
  DeviceBuffer upload(const std::vector<T> &v, const char *what) {
    Expected<DeviceBuffer> b =
        dev->upload(v.data(), v.size() * sizeof(T), what);
    EXPECT_TRUE(bool(b)) << b.status().message();
    return b ? std::move(*b) : DeviceBuffer();
  }

  /// Emits `specs` and loads their kernels on the device.
  void compileLinears(const std::vector<LinearSpec> &specs,
                      gpubench::LoadedKernels &compiled) {
    std::vector<GeneratedKernel> sources;
    for (const LinearSpec &s : specs) {
      GeneratedKernel g;
      ASSERT_TRUE(emitLinear(s, g).ok());
      sources.push_back(g);
    }
    ASSERT_NO_FATAL_FAILURE(compileForDevice(*dev, sources, compiled));
  }

  CudaDevice *dev = nullptr;
};

TEST_F(CudaDeviceKernels, LinearMatchesTheCpuForEveryWeightType) {
  gpubench::LoadedKernels compiled;
  ASSERT_NO_FATAL_FAILURE(compileLinears(linearVariants(), compiled));
  std::mt19937 rng(41);
  for (const LinearSpec &s : linearVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name + " on " + dev->name());
    const int64_t n = 37, k = s.k;
    Expected<gpubench::DeviceWeight> dw = gpubench::uploadWeight(
        *dev, randomWeights(n, k, rng), n, k, s.weightType, s.groupSize);
    ASSERT_TRUE(bool(dw)) << dw.status().message();
    const cpu::WeightView v = dw->packed.view();
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> bias(static_cast<size_t>(n));
    for (float &b : bias)
      b = normal(rng);
    DeviceBuffer dBias = upload(bias, "bias");
    for (int64_t m : {int64_t(0), int64_t(1), int64_t(2 * s.rowsPerPass + 1)}) {
      SCOPED_TRACE("m=" + std::to_string(m));
      std::vector<float> x(size_t(m * k));
      for (float &e : x)
        e = normal(rng);
      DeviceBuffer dx = upload(x, "x");
      Expected<DeviceBuffer> dy = dev->allocate(size_t(m * n) * 4, "y");
      ASSERT_TRUE(bool(dy)) << dy.status().message();
      folio_cuda::LinearArgs a{};
      a.x = dx.as<const float>();
      a.m = m;
      gpubench::bindWeight(*dw, a);
      a.bias = dBias.as<const float>();
      a.y = dy->as<float>();
      a.n = n;
      device::CudaLaunch l = gpubench::toLaunch(linearLaunch(s, n));
      ASSERT_OK(dev->launch(compiled.byName.at(name), l, &a));
      ASSERT_OK(dev->synchronize());
      std::vector<float> got(size_t(m * n));
      ASSERT_OK(dev->copyToHost(got.data(), *dy, 0, got.size() * 4));

      expectLinearMatches(got, x, m, v, bias);
    }
  }
}

// The dequantizing form writes each weight as codegen/CPU's weightViewAt
// reads it, rounded to bf16 as floatToBf16 rounds, bit for bit: int8 with
// its outlier columns (columns 3 and k - 2, 40x the rest), a zero row,
// fp8_e4m3, int4 in every group size.
TEST_F(CudaDeviceKernels, DequantizesWeightsToTheCpusValuesInBf16) {
  gpubench::LoadedKernels compiled;
  ASSERT_NO_FATAL_FAILURE(compileLinears(dequantVariants(), compiled));
  std::mt19937 rng(43);
  for (const LinearSpec &s : dequantVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name + " on " + dev->name());
    const int64_t n = 37, k = s.k;
    Expected<gpubench::DeviceWeight> dw = gpubench::uploadWeight(
        *dev, randomWeights(n, k, rng), n, k, s.weightType, s.groupSize);
    ASSERT_TRUE(bool(dw)) << dw.status().message();
    const cpu::WeightView v = dw->packed.view();
    if (s.weightType == cpu::DType::I8)
      ASSERT_GT(v.numOutliers, 0);
    Expected<DeviceBuffer> dy = dev->allocate(size_t(n * k) * 2, "bf16 rows");
    ASSERT_TRUE(bool(dy)) << dy.status().message();
    folio_cuda::LinearArgs a{};
    gpubench::bindWeight(*dw, a);
    a.y = dy->as<float>();
    a.n = n;
    device::CudaLaunch l = gpubench::toLaunch(linearLaunch(s, n));
    ASSERT_OK(dev->launch(compiled.byName.at(name), l, &a));
    ASSERT_OK(dev->synchronize());
    std::vector<uint16_t> got(size_t(n * k));
    ASSERT_OK(dev->copyToHost(got.data(), *dy, 0, got.size() * 2));
    int64_t wrong = 0;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        uint16_t want = cpu::floatToBf16(cpu::weightViewAt(v, r, c));
        if (got[size_t(r * k + c)] != want && wrong++ < 5)
          ADD_FAILURE() << "(" << r << ", " << c
                        << "): " << got[size_t(r * k + c)] << " instead of "
                        << want;
      }
    EXPECT_EQ(wrong, 0);
  }
}

// The quantizing form codes each x row as floatToFp8E4M3(x / scale) with
// scale = its largest |x| / 448, bit for bit (gpubench::measureLinear's
// check: normal rows, a row of zeros, a NaN, values spanning e4m3's range).
TEST_F(CudaDeviceKernels, QuantizesRowsOfXToFp8AsDefined) {
  gpubench::LoadedKernels compiled;
  ASSERT_NO_FATAL_FAILURE(compileLinears(quantizeXVariants(), compiled));
  for (const LinearSpec &s : quantizeXVariants()) {
    SCOPED_TRACE(kernelName(s) + " on " + dev->name());
    for (int m : {4, 9}) {
      Expected<gpubench::LinearResult> r =
          gpubench::measureLinear(*dev, compiled, {s, 1, m}, 1);
      EXPECT_TRUE(bool(r)) << r.status().message();
    }
  }
}

TEST_F(CudaDeviceKernels, MemoryRoundTripsAndRefusesWhatIsOutOfRange) {
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = uint8_t(i * 7);
  DeviceBuffer a = upload(bytes, "a");
  Expected<DeviceBuffer> b = dev->allocate(bytes.size(), "b");
  ASSERT_TRUE(bool(b));
  ASSERT_OK(dev->copyOnDevice(*b, a, bytes.size()));
  std::vector<uint8_t> back(bytes.size());
  ASSERT_OK(dev->copyToHost(back.data(), *b, 0, back.size()));
  EXPECT_EQ(back, bytes);
  ASSERT_OK(dev->fill(*b, 0xab));
  ASSERT_OK(dev->copyToHost(back.data(), *b, 10, 5));
  EXPECT_EQ(back[0], 0xab);
  EXPECT_EQ(back[4], 0xab);

  Status s = dev->copyToHost(back.data(), a, 990, 11);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("bytes [990, 1001) outside a buffer of 1000"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(dev->copyToDevice(a, 1001, bytes.data(), 0));
  // A zero-byte buffer is valid and empty.
  Expected<DeviceBuffer> empty = dev->allocate(0, "nothing");
  ASSERT_TRUE(bool(empty));
  EXPECT_EQ(empty->bytes(), 0u);
}

TEST_F(CudaDeviceKernels, DriverErrorsNameTheCallAndWhatItWasFor) {
  // More than the device has.
  Expected<DeviceBuffer> huge =
      dev->allocate(dev->totalMemory() + (size_t(1) << 20), "a huge pool");
  ASSERT_FALSE(bool(huge));
  EXPECT_EQ(huge.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(huge.status().message().find("cuMemAlloc of"), std::string::npos);
  EXPECT_NE(huge.status().message().find("for a huge pool failed"),
            std::string::npos)
      << huge.status().message();
  EXPECT_NE(huge.status().message().find("CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << huge.status().message();

  // A kernel the module does not have.
  GeneratedKernel g;
  ASSERT_TRUE(emitLinear(linearVariants()[0], g).ok());
  gpubench::LoadedKernels compiled;
  ASSERT_NO_FATAL_FAILURE(compileForDevice(*dev, {g}, compiled));
  Expected<device::CudaKernel> missing =
      dev->kernel(compiled.module, "folio_no_such_kernel");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(missing.status().message().find(
                "has no kernel named folio_no_such_kernel"),
            std::string::npos)
      << missing.status().message();

  // Not an image.
  Expected<device::CudaModule> bad = dev->loadModule("garbage", "a bad image");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.status().message().find("cuModuleLoadDataEx for a bad image"),
            std::string::npos)
      << bad.status().message();

  // More dynamic shared memory than any kernel may have.
  device::CudaLaunch l;
  l.dynamicShared = dev->maxDynamicShared() + 1;
  folio_cuda::LinearArgs a{};
  Status s = dev->launch(compiled.byName.begin()->second, l, &a);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("bytes of dynamic shared memory; this device "
                             "allows"),
            std::string::npos)
      << s.message();
}

TEST_F(CudaDeviceKernels, SharedMemoryOptInOncePerKernel) {
  if (!fakeRegister)
    GTEST_SKIP() << "counts the fake driver's calls";
  auto calls = reinterpret_cast<int (*)()>(
      ::dlsym(::dlopen(FOLIO_FAKE_CUDA_DEVICE, RTLD_NOW | RTLD_LOCAL),
              "folioFakeCudaSetAttributeCalls"));
  ASSERT_NE(calls, nullptr);
  GeneratedKernel g;
  ASSERT_TRUE(emitLinear(linearVariants()[0], g).ok());
  gpubench::LoadedKernels compiled;
  ASSERT_NO_FATAL_FAILURE(compileForDevice(*dev, {g}, compiled));
  const device::CudaKernel &k = compiled.byName.begin()->second;
  // An empty pass (m = 0) launched with 64 KiB, then 64 KiB again, then
  // 32: one opt-in, at the first launch.
  folio_cuda::LinearArgs a{};
  device::CudaLaunch l;
  l.block[0] = 128;
  int before = calls();
  for (size_t shared : {size_t(64) << 10, size_t(64) << 10, size_t(32) << 10}) {
    l.dynamicShared = shared;
    ASSERT_OK(dev->launch(k, l, &a));
  }
  EXPECT_EQ(calls() - before, 1);
  EXPECT_EQ(k.sharedLimit, size_t(64) << 10);
}

TEST_F(CudaDeviceKernels, EventsTimeWhatTheBodyEnqueues) {
  Expected<DeviceBuffer> a = dev->allocate(1 << 20, "a");
  Expected<DeviceBuffer> b = dev->allocate(1 << 20, "b");
  ASSERT_TRUE(a && b);
  Expected<double> ms =
      dev->time([&] { return dev->copyOnDevice(*b, *a, 1 << 20); });
  ASSERT_TRUE(bool(ms)) << ms.status().message();
  EXPECT_GE(*ms, 0.0);
  Expected<double> failed = dev->time([] { return Status::internal("body"); });
  EXPECT_FALSE(bool(failed));
}

/// The GPU check's measurements (tools/folio-gpu-bench) at small sizes:
/// each checks its kernel against the CPU before it times anything.
TEST_F(CudaDeviceKernels, GpuBenchChecksThenMeasures) {
  std::vector<GeneratedKernel> sources;
  std::vector<PagedDecodeSpec> decodes;
  for (const PagedDecodeSpec &s : pagedDecodeVariants()) {
    GeneratedKernel main, combine;
    ASSERT_TRUE(emitPagedDecode(s, main, combine).ok());
    sources.push_back(main);
    sources.push_back(combine);
    decodes.push_back(s);
  }
  for (const LinearSpec &s : linearVariants()) {
    GeneratedKernel g;
    ASSERT_TRUE(emitLinear(s, g).ok());
    sources.push_back(g);
  }
  for (const PagedPrefillSpec &s : pagedPrefillVariants()) {
    GeneratedKernel g;
    ASSERT_TRUE(emitPagedPrefill(s, g).ok());
    sources.push_back(g);
  }
  for (const KVWriteSpec &s : kvWriteVariants()) {
    GeneratedKernel g;
    ASSERT_TRUE(emitKVWrite(s, g).ok());
    sources.push_back(g);
  }
  gpubench::LoadedKernels kernels;
  ASSERT_OK(gpubench::loadKernels(*dev, sources, kernels));

  Expected<gpubench::Timing> copy = gpubench::measureCopy(*dev, 1 << 16, 3);
  ASSERT_TRUE(bool(copy)) << copy.status().message();
  EXPECT_EQ(copy->bytes, 2.0 * (1 << 16));
  EXPECT_EQ(copy->runs, 3);

  auto sameAttention = [](const PagedDecodeSpec &a, const PagedDecodeSpec &b) {
    return a.cacheType == b.cacheType && a.headDim == b.headDim &&
           a.blockSize == b.blockSize && a.numKvHeads == b.numKvHeads &&
           a.queriesPerKv == b.queriesPerKv && a.group == b.group;
  };
  int alternativesRun = 0;
  for (const PagedDecodeSpec &s : decodes) {
    SCOPED_TRACE(kernelName(s));
    // Three partitions: the combine kernel runs too.
    gpubench::DecodeCase c{s, 3, 2 * s.partition + 7, {}};
    // The variants that differ in threads and partition only: the tuning
    // alternatives, each checked and timed on the same inputs.
    for (const PagedDecodeSpec &o : decodes)
      if (kernelName(o) != kernelName(s) && sameAttention(o, s))
        c.alternatives.push_back(o);
    Expected<gpubench::DecodeResult> r =
        gpubench::measurePagedDecode(*dev, kernels, c, 2);
    ASSERT_TRUE(bool(r)) << r.status().message();
    EXPECT_EQ(r->partitions, 3);
    EXPECT_LT(r->maxRelDiff, 1e-4);
    ASSERT_EQ(r->alternatives.size(), c.alternatives.size());
    for (const gpubench::DecodeResult::Alternative &alt : r->alternatives) {
      ++alternativesRun;
      EXPECT_EQ(alt.partitions,
                (c.context + alt.spec.partition - 1) / alt.spec.partition);
      EXPECT_LT(alt.maxRelDiff, 1e-4);
      EXPECT_EQ(alt.timing.bytes, r->timing.bytes);
      EXPECT_GT(alt.timing.ms, 0.0);
    }
    cpu::KVCacheView view;
    view.numKvHeads = s.numKvHeads;
    view.headDim = s.headDim;
    view.dtype = s.cacheType;
    view.group = s.group;
    const double q = 3.0 * s.numKvHeads * s.queriesPerKv * s.headDim * 4;
    EXPECT_EQ(r->timing.bytes,
              3.0 * c.context * 2 *
                      double(view.slotBytes() + view.paramSlotBytes()) +
                  2 * q);
    EXPECT_GT(r->timing.ms, 0.0);
  }
  EXPECT_EQ(alternativesRun, 2); // the two bf16 variants, each way
  {
    // An alternative that is another attention is refused, not timed.
    gpubench::DecodeCase c{decodes[0], 2, 9, {decodes[1]}};
    Expected<gpubench::DecodeResult> r =
        gpubench::measurePagedDecode(*dev, kernels, c, 2);
    ASSERT_FALSE(bool(r));
    EXPECT_NE(r.status().message().find("only threads and partition"),
              std::string::npos)
        << r.status().message();
  }
  int linearAlternativesRun = 0;
  for (const LinearSpec &s : linearVariants()) {
    SCOPED_TRACE(kernelName(s));
    // The variants of the same weights with other launch parameters: the
    // tuning alternatives, each checked and timed on the same weights.
    std::vector<LinearSpec> alternatives;
    for (const LinearSpec &o : linearVariants())
      if (kernelName(o) != kernelName(s) && o.weightType == s.weightType &&
          o.k == s.k && o.groupSize == s.groupSize)
        alternatives.push_back(o);
    for (int m : {1, 9}) {
      Expected<gpubench::LinearResult> r =
          gpubench::measureLinear(*dev, kernels, {s, 21, m, alternatives}, 2);
      ASSERT_TRUE(bool(r)) << r.status().message();
      EXPECT_LE(r->maxBoundFraction, 1.0);
      EXPECT_GT(r->timing.bytes, 21.0 * s.k * cpu::dtypeBits(s.weightType) / 8);
      ASSERT_EQ(r->alternatives.size(), alternatives.size());
      for (const gpubench::LinearResult::Alternative &alt : r->alternatives) {
        ++linearAlternativesRun;
        EXPECT_LE(alt.maxBoundFraction, 1.0);
        EXPECT_EQ(alt.timing.bytes, r->timing.bytes);
      }
    }
  }
  EXPECT_EQ(linearAlternativesRun, 8); // two pairs, each way, m = 1 and 9
  {
    // An alternative over other weights is refused, not timed.
    LinearSpec other = linearVariants()[0];
    other.k += 1;
    Expected<gpubench::LinearResult> r = gpubench::measureLinear(
        *dev, kernels, {linearVariants()[0], 21, 1, {other}}, 2);
    ASSERT_FALSE(bool(r));
    EXPECT_NE(r.status().message().find("only its launch parameters"),
              std::string::npos)
        << r.status().message();
  }

  for (const PagedPrefillSpec &s : pagedPrefillVariants()) {
    SCOPED_TRACE(kernelName(s));
    // A whole prompt, and a chunk after cached context.
    for (auto [context, queries] : {std::pair{40, 40}, std::pair{70, 9}}) {
      Expected<gpubench::PrefillResult> r = gpubench::measurePagedPrefill(
          *dev, kernels, {s, 2, context, queries}, 2);
      ASSERT_TRUE(bool(r)) << r.status().message();
      // bf16 inputs on tensor cores (the bench's own limit is 3e-2).
      EXPECT_LT(r->maxRelDiff, s.tensorCores ? 2e-2 : 1e-4);
      const double heads = double(s.numKvHeads) * s.queriesPerKv;
      const double seen =
          queries * double(context - queries) + queries * (queries + 1) / 2.0;
      EXPECT_EQ(r->flops, 2 * seen * heads * s.headDim * 4);
    }
    Expected<gpubench::PrefillResult> bad =
        gpubench::measurePagedPrefill(*dev, kernels, {s, 1, 8, 9}, 1);
    ASSERT_FALSE(bool(bad));
    EXPECT_NE(bad.status().message().find("needs 1 to context (8)"),
              std::string::npos)
        << bad.status().message();
  }
  for (const KVWriteSpec &s : kvWriteVariants()) {
    SCOPED_TRACE(kernelName(s));
    Expected<gpubench::KVWriteResult> r =
        gpubench::measureKVWrite(*dev, kernels, {s, 37}, 2);
    ASSERT_TRUE(bool(r)) << r.status().message();
    EXPECT_GT(r->timing.bytes, 37.0 * 2 * s.numKvHeads * s.headDim * 4);
  }

  if (!fakeRegister)
    return; // on a GPU the kernels are what they are
  // A wrong kernel under the right name is caught before any timing.
  const PagedDecodeSpec &a = decodes[0], &b = decodes[1];
  ASSERT_NE(a.cacheType, b.cacheType);
  const FolioTestPagedDecode *right = nullptr, *wrong = nullptr;
  for (const FolioTestPagedDecode &k : kFolioTestPagedDecode) {
    if (canonicalKey(a) == k.key)
      right = &k;
    if (canonicalKey(b) == k.key)
      wrong = &k;
  }
  ASSERT_TRUE(right && wrong);
  fakeRegister(kernelName(a).c_str(), &emulate<folio_cuda::PagedDecodeArgs>,
               sizeof(folio_cuda::PagedDecodeArgs),
               reinterpret_cast<void *>(wrong->main));
  Expected<gpubench::DecodeResult> r =
      gpubench::measurePagedDecode(*dev, kernels, {a, 2, 40}, 2);
  fakeRegister(kernelName(a).c_str(), &emulate<folio_cuda::PagedDecodeArgs>,
               sizeof(folio_cuda::PagedDecodeArgs),
               reinterpret_cast<void *>(right->main));
  ASSERT_FALSE(bool(r));
  EXPECT_NE(r.status().message().find("differs from the CPU pagedAttention"),
            std::string::npos)
      << r.status().message();

  // A kv_write that stores another cache dtype's rows is caught too.
  const std::vector<KVWriteSpec> writes = kvWriteVariants();
  const KVWriteSpec &ka = writes[0], &kb = writes[1];
  ASSERT_EQ(ka.headDim, kb.headDim);
  ASSERT_EQ(ka.numKvHeads, kb.numKvHeads);
  const FolioTestKVWrite *kRight = nullptr, *kWrong = nullptr;
  for (const FolioTestKVWrite &k : kFolioTestKVWrite) {
    if (canonicalKey(ka) == k.key)
      kRight = &k;
    if (canonicalKey(kb) == k.key)
      kWrong = &k;
  }
  ASSERT_TRUE(kRight && kWrong);
  fakeRegister(kernelName(ka).c_str(), &emulate<folio_cuda::KVWriteArgs>,
               sizeof(folio_cuda::KVWriteArgs),
               reinterpret_cast<void *>(kWrong->kernel));
  Expected<gpubench::KVWriteResult> w =
      gpubench::measureKVWrite(*dev, kernels, {ka, 5}, 1);
  fakeRegister(kernelName(ka).c_str(), &emulate<folio_cuda::KVWriteArgs>,
               sizeof(folio_cuda::KVWriteArgs),
               reinterpret_cast<void *>(kRight->kernel));
  ASSERT_FALSE(bool(w));
  EXPECT_NE(w.status().message().find("does not write what the CPU kvWrite"),
            std::string::npos)
      << w.status().message();

  // A linear whose outputs are NaN is caught: a NaN difference must not
  // pass as the largest one.
  const LinearSpec ls = linearVariants()[0];
  const FolioTestLinear *lRight = nullptr;
  for (const FolioTestLinear &k : kFolioTestLinear)
    if (canonicalKey(ls) == k.key)
      lRight = &k;
  ASSERT_TRUE(lRight);
  fakeRegister(kernelName(ls).c_str(), &emulate<folio_cuda::LinearArgs>,
               sizeof(folio_cuda::LinearArgs),
               reinterpret_cast<void *>(&writesNaN));
  Expected<gpubench::LinearResult> nan =
      gpubench::measureLinear(*dev, kernels, {ls, 21, 2}, 1);
  fakeRegister(kernelName(ls).c_str(), &emulate<folio_cuda::LinearArgs>,
               sizeof(folio_cuda::LinearArgs),
               reinterpret_cast<void *>(lRight->kernel));
  ASSERT_FALSE(bool(nan));
  EXPECT_NE(nan.status().message().find("differs from the CPU linear by nan"),
            std::string::npos)
      << nan.status().message();
}

// A CUDA graph replays its launches with the arguments they had when
// captured, each time it is launched, on the values the buffers hold
// then; what cannot be part of a graph is refused while capturing.
TEST_F(CudaDeviceKernels, GraphsReplayTheirCapturedLaunches) {
  const CastSpec spec{CastType::I32, CastType::I64, 256};
  GeneratedKernel g;
  ASSERT_TRUE(emitCast(spec, g).ok());
  gpubench::LoadedKernels kernels;
  ASSERT_OK(gpubench::loadKernels(*dev, {g}, kernels));
  const device::CudaKernel &cast = kernels.byName.at(kernelName(spec));
  std::vector<int32_t> first = {1, -2, 3, 1 << 30, 5};
  DeviceBuffer in = upload(first, "ids"), other = upload(first, "other ids");
  Expected<DeviceBuffer> out = dev->allocate(5 * 8, "wide ids");
  ASSERT_TRUE(bool(out));
  folio_cuda::CastArgs a{reinterpret_cast<const void *>(in.ptr()),
                         reinterpret_cast<void *>(out->ptr()), 5};

  EXPECT_FALSE(bool(dev->endCapture())) << "no capture was begun";
  ASSERT_OK(dev->beginCapture());
  EXPECT_TRUE(dev->capturing());
  Status launched =
      dev->launch(cast, gpubench::toLaunch(cuda::castLaunch(spec, 5)), &a);
  Status copied = dev->copyToDevice(in, 0, first.data(), 4);
  Expected<device::CudaGraph> graph = dev->endCapture();
  ASSERT_OK(launched);
  ASSERT_FALSE(bool(copied));
  EXPECT_NE(copied.message().find("copyToDevice while capturing a CUDA graph"),
            std::string::npos)
      << copied.message();
  ASSERT_TRUE(bool(graph)) << graph.status().message();
  EXPECT_FALSE(dev->capturing());

  // Captured, not run: the output is still what it was.
  ASSERT_OK(dev->fill(*out, 0));
  std::vector<int64_t> got(5, -1);
  ASSERT_OK(dev->copyToHost(got.data(), *out, 0, 40));
  EXPECT_EQ(got, std::vector<int64_t>(5, 0));
  // The argument struct changes after the capture; the graph keeps its
  // copy, and reads the input as it is when launched.
  a.in = reinterpret_cast<const void *>(other.ptr());
  a.n = 1;
  for (int32_t round : {0, 1}) {
    std::vector<int32_t> now = {7 + round, 8, -9, 10, 11};
    ASSERT_OK(dev->copyToDevice(in, 0, now.data(), 20));
    ASSERT_OK(dev->launchGraph(*graph));
    ASSERT_OK(dev->copyToHost(got.data(), *out, 0, 40));
    EXPECT_EQ(got, std::vector<int64_t>(now.begin(), now.end()));
  }
  EXPECT_FALSE(bool(dev->launchGraph(device::CudaGraph())));
}

/// The row, rotary, gather and sampling measurements, each checked against
/// the host (the row programs against their evaluation in double).
TEST_F(CudaDeviceKernels, GpuBenchRowKernelsChecksThenMeasures) {
  std::vector<GeneratedKernel> sources;
  GeneratedKernel g;
  for (const RowKernelSpec &s : rowKernelVariants()) {
    ASSERT_TRUE(emitRowKernel(s, g).ok());
    sources.push_back(g);
  }
  for (const RotarySpec &s : rotaryVariants()) {
    ASSERT_TRUE(emitRotary(s, g).ok());
    sources.push_back(g);
  }
  for (const GatherSpec &s : gatherVariants()) {
    ASSERT_TRUE(emitGather(s, g).ok());
    sources.push_back(g);
  }
  for (const SampleSpec &s : sampleVariants()) {
    ASSERT_TRUE(emitSample(s, g).ok());
    sources.push_back(g);
  }
  for (const CastSpec &s : castVariants()) {
    ASSERT_TRUE(emitCast(s, g).ok());
    sources.push_back(g);
  }
  gpubench::LoadedKernels kernels;
  ASSERT_OK(gpubench::loadKernels(*dev, sources, kernels));
  for (const RowKernelSpec &s : rowKernelVariants()) {
    SCOPED_TRACE(s.label);
    Expected<gpubench::RowResult> r =
        gpubench::measureRowKernel(*dev, kernels, {s, 5}, 2);
    ASSERT_TRUE(bool(r)) << r.status().message();
    EXPECT_LT(r->maxRelDiff, 1e-4);
  }
  for (const RotarySpec &s : rotaryVariants()) {
    Expected<gpubench::Timing> r =
        gpubench::measureRotary(*dev, kernels, {s, 9}, 2);
    ASSERT_TRUE(bool(r)) << kernelName(s) << ": " << r.status().message();
  }
  for (const GatherSpec &s : gatherVariants()) {
    Expected<gpubench::Timing> r =
        gpubench::measureGather(*dev, kernels, {s, 7, 50}, 2);
    ASSERT_TRUE(bool(r)) << kernelName(s) << ": " << r.status().message();
    if (cpu::isPlainFloat(s.tableType)) {
      EXPECT_EQ(r->bytes,
                7.0 * (s.dim * (cpu::dtypeBits(s.tableType) / 8.0 + 4) + 8));
    }
  }
  for (const CastSpec &s : castVariants())
    for (int n : {1, 300}) {
      Expected<gpubench::Timing> r =
          gpubench::measureCast(*dev, kernels, {s, n}, 2);
      ASSERT_TRUE(bool(r)) << kernelName(s) << " n " << n << ": "
                           << r.status().message();
    }
  for (const SampleSpec &s : sampleVariants())
    for (int vocab : {1, 37, 1000}) {
      Expected<gpubench::Timing> r =
          s.mode == SampleMode::Verify
              ? gpubench::measureVerify(*dev, kernels, {s, 11, 4, vocab}, 2)
              : gpubench::measureSample(*dev, kernels, {s, 12, vocab}, 2);
      ASSERT_TRUE(bool(r)) << kernelName(s) << " vocab " << vocab << ": "
                           << r.status().message();
      if (s.mode == SampleMode::Verify) {
        EXPECT_EQ(r->bytes, 11.0 * 5 * vocab * 4);
        r = gpubench::measureVerify(*dev, kernels, {s, 11, 4, vocab, true}, 2);
        ASSERT_TRUE(bool(r))
            << kernelName(s) << " with draft distributions, "
            << "vocab " << vocab << ": " << r.status().message();
      }
      if (s.mode == SampleMode::Logprobs) { // reading the draw's keep sets
        r = gpubench::measureSample(*dev, kernels, {s, 12, vocab, true}, 2);
        ASSERT_TRUE(bool(r)) << kernelName(s) << " after the draw, vocab "
                             << vocab << ": " << r.status().message();
      }
    }
  SampleSpec verifier{SampleMode::Verify, 64}, draw{SampleMode::Draw, 64};
  EXPECT_FALSE(
      bool(gpubench::measureSample(*dev, kernels, {verifier, 2, 9}, 1)));
  EXPECT_FALSE(
      bool(gpubench::measureVerify(*dev, kernels, {draw, 2, 4, 9}, 1)));
}

TEST_F(CudaDeviceKernels, GpuBenchCublasLinearChecksThenMeasures) {
  Expected<std::unique_ptr<device::CublasLt>> lt = device::CublasLt::open(*dev);
  ASSERT_TRUE(bool(lt)) << lt.status().message();
  for (auto [m, n, k] : {std::tuple{3, 20, 40}, std::tuple{17, 300, 64}}) {
    Expected<gpubench::GemmResult> r =
        gpubench::measureCublasLinear(*dev, **lt, m, n, k, 2);
    ASSERT_TRUE(bool(r)) << r.status().message();
    EXPECT_LE(r->maxBoundFraction, 1.0);
    EXPECT_EQ(r->timing.bytes, 2.0 * (n * k + m * k) + 4.0 * (n + m * n));
    EXPECT_GT(r->tflopsPerS, 0.0);
  }
}

TEST_F(CudaDeviceKernels, GpuBenchCublasFp8LinearChecksThenMeasures) {
  if (dev->major() * 10 + dev->minor() < 89)
    GTEST_SKIP() << "no fp8 tensor cores on " << dev->name();
  Expected<std::unique_ptr<device::CublasLt>> lt = device::CublasLt::open(*dev);
  ASSERT_TRUE(bool(lt)) << lt.status().message();
  for (auto [m, n, k] : {std::tuple{3, 20, 48}, std::tuple{17, 300, 64}}) {
    Expected<gpubench::GemmResult> r =
        gpubench::measureCublasLinearFp8(*dev, **lt, m, n, k, 2);
    ASSERT_TRUE(bool(r)) << r.status().message();
    EXPECT_LE(r->maxBoundFraction, 1.0);
    EXPECT_EQ(r->timing.bytes, double(n * k + m * k) + 4.0 * (n + m + m * n));
    EXPECT_GT(r->tflopsPerS, 0.0);
  }
  // k not a multiple of 16: no algorithm, said as such.
  Expected<gpubench::GemmResult> r =
      gpubench::measureCublasLinearFp8(*dev, **lt, 3, 20, 40, 1);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.status().code(), StatusCode::NotFound) << r.status().message();
}

TEST(GpuBenchReference, DecodeTargetsReadTheRuns) {
  auto run = [](cpu::DType t, int context, double ms, double gbPerS) {
    gpubench::DecodeCase c;
    c.spec.cacheType = t;
    c.seqs = 4;
    c.context = context;
    gpubench::DecodeResult r;
    r.timing.ms = ms;
    r.timing.gbPerS = gbPerS;
    return std::pair{c, r};
  };
  using cpu::DType;
  // Copy at 4000 GB/s: int4 at the long context is the slowest (0.75).
  std::vector<std::pair<gpubench::DecodeCase, gpubench::DecodeResult>> runs = {
      run(DType::BF16, 512, 1.0, 3500), run(DType::FP8E4M3, 512, 1.04, 3400),
      run(DType::BF16, 8192, 2.0, 3600), run(DType::FP8E4M3, 8192, 1.2, 3300),
      run(DType::I4, 8192, 0.9, 3000)};
  Expected<gpubench::DecodeTargets> t = gpubench::decodeTargets(runs, 4000);
  ASSERT_TRUE(bool(t)) << t.status().message();
  EXPECT_DOUBLE_EQ(t->minFractionOfCopy, 0.75);
  EXPECT_EQ(t->slowest, "int4 at 4 x 8192");
  EXPECT_FALSE(t->bandwidthMet);
  EXPECT_DOUBLE_EQ(t->fp8OverBf16Short, 1.04);
  EXPECT_DOUBLE_EQ(t->fp8OverBf16Long, 0.6);
  EXPECT_TRUE(t->fp8Met);
  // fp8 6 % slower at the short context misses it.
  runs[1].second.timing.ms = 1.06;
  EXPECT_FALSE(gpubench::decodeTargets(runs, 4000)->fp8Met);
  // A shape without its bf16 run cannot be compared.
  runs.erase(runs.begin());
  Expected<gpubench::DecodeTargets> missing =
      gpubench::decodeTargets(runs, 4000);
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(missing.status().message().find("at context 512 lack"),
            std::string::npos)
      << missing.status().message();
}

TEST(GpuBenchReference, RowProgramsEvaluateAsTheirOpsSay) {
  // out0 = rms_norm(x + r, w) with Gemma's offset, out1 = silu(x) * 2.
  RowKernelSpec s;
  s.dim = 4;
  s.inputs = {RowInputKind::Row, RowInputKind::Row, RowInputKind::Vector};
  auto op = [](RowOpKind k, const char *fn, int a, int b = -1) {
    RowOp o;
    o.kind = k;
    o.fn = fn;
    o.a = a;
    o.b = b;
    return o;
  };
  RowOp x = op(RowOpKind::Input, "", -1), r = x, w = x;
  x.index = 0;
  r.index = 1;
  w.index = 2;
  RowOp norm = op(RowOpKind::RmsNorm, "", 3, 2);
  norm.value = 1e-6;
  norm.weightOffset = 1.0;
  RowOp two = op(RowOpKind::Constant, "", -1);
  two.value = 2.0;
  RowOp out0 = op(RowOpKind::Output, "", 4),
        out1 = op(RowOpKind::Output, "", 7);
  out0.index = 0;
  out1.index = 1;
  s.ops = {x,    r,
           w,    op(RowOpKind::Binary, "add", 0, 1),
           norm, op(RowOpKind::Unary, "silu", 0),
           two,  op(RowOpKind::Binary, "mul", 5, 6),
           out0, out1};
  s.numOutputs = 2;
  std::vector<std::vector<float>> in = {
      {1, 2, 3, 4}, {1, 0, -1, 0}, {0.5f, 0, -0.5f, 1}};
  std::vector<std::vector<double>> out = gpubench::evaluateRowProgram(s, in, 1);
  const double h[] = {2, 2, 2, 4};
  double ms = (4 + 4 + 4 + 16) / 4.0;
  for (int d = 0; d < 4; ++d) {
    EXPECT_NEAR(out[0][size_t(d)],
                h[d] / std::sqrt(ms + double(float(1e-6))) * (1 + in[2][d]),
                1e-12);
    // Elementwise ops round to f32 one by one, as the CPU executor's
    // steps store them.
    double xd = in[0][size_t(d)];
    float silu = float(xd / (1 + std::exp(-xd)));
    EXPECT_EQ(out[1][size_t(d)], double(float(2.0 * double(silu))));
  }
}

} // namespace
} // namespace folio::cuda::test
