//===- Emulation.h - Compile CUDA C++ kernels as host C++ -------*- C++ -*-===//
//
// Include this before a kernel source to compile it with g++/clang++ and run
// it on the CPU with folio::cuda_emu::launch (Runtime.h has the model). It
// provides what the toolkit's headers leave device-only: the builtins,
// barriers, warp shuffles / votes / reductions, atomics, __ldg, and the fast
// math intrinsics glibc declares but does not export. cuda_fp16.h,
// cuda_bf16.h and cuda_fp8.h themselves compile as host C++ and round
// exactly as the device instructions do.
//
// Not emulable (keep it under __CUDA_ARCH__ with a portable twin): inline
// PTX, mma / cp.async / TMA, cooperative groups, clusters, grid-wide sync.
// Build users with -fno-strict-aliasing (kernels pun __half2 and friends,
// which are not trivially copyable on the host).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_EMULATION_EMULATION_H
#define FOLIO_CODEGEN_CUDA_EMULATION_EMULATION_H

#if defined(__CUDACC__)
#error                                                                         \
    "Emulation.h is for host compilers; nvcc and NVRTC compile kernels as they are"
#endif

#define FOLIO_CUDA_EMULATION 1

// Before the toolkit's headers, or crt/host_defines.h defines __shared__
// as nothing: thread_local makes one copy per worker, shared by the fibers
// of the block it runs.
#define __shared__ thread_local

#include "codegen/CUDA/Emulation/Builtins.h"
#include "codegen/CUDA/Emulation/Runtime.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

// The host compiler would warn about an unknown attribute.
#undef __launch_bounds__
#define __launch_bounds__(...)

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

// The device's math library is global; <cmath> puts these in std.
using std::isfinite;
using std::isinf;
using std::isnan;

// --- Barriers --------------------------------------------------------------

inline void __syncthreads() {
  folio::cuda_emu::blockBarrier(folio::cuda_emu::BarrierOp::Sync, 0);
}
inline int __syncthreads_count(int p) {
  return folio::cuda_emu::blockBarrier(folio::cuda_emu::BarrierOp::Count, p);
}
inline int __syncthreads_and(int p) {
  return folio::cuda_emu::blockBarrier(folio::cuda_emu::BarrierOp::And, p);
}
inline int __syncthreads_or(int p) {
  return folio::cuda_emu::blockBarrier(folio::cuda_emu::BarrierOp::Or, p);
}
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
[[noreturn]] inline void __trap() { folio::cuda_emu::trap("__trap()"); }

// --- Warp collectives --------------------------------------------------------

namespace folio::cuda_emu::detail {

template <typename T> struct Exchanged {
  const unsigned char (*slots)[16];
  unsigned arrived;
  T get(unsigned lane) const {
    T v;
    std::memcpy(static_cast<void *>(&v), slots[lane], sizeof(T));
    return v;
  }
};

template <typename T> Exchanged<T> exchange(unsigned mask, const T &value) {
  static_assert(sizeof(T) <= 16, "warp collectives move at most 16 bytes");
  Exchanged<T> e;
  e.slots = warpExchange(mask, static_cast<const void *>(&value), sizeof(T),
                         e.arrived);
  return e;
}

/// The PTX shfl.sync rule: lanes read within their segment of `width`
/// lanes; a source outside it (or a lane that did not take part) yields the
/// caller's own value.
template <typename T>
T shuffleFrom(unsigned mask, T var, int src, bool inRange) {
  Exchanged<T> e = exchange(mask, var);
  if (!inRange || src < 0 || src > 31 || !(e.arrived & (1u << src)))
    return var;
  return e.get(unsigned(src));
}

inline int segmentStart(int width) { return int(laneId()) & ~(width - 1); }

} // namespace folio::cuda_emu::detail

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  folio::cuda_emu::detail::exchange(mask, 0);
}
inline unsigned __activemask() { return folio::cuda_emu::liveLanes(); }

template <typename T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32) {
  int start = folio::cuda_emu::detail::segmentStart(width);
  return folio::cuda_emu::detail::shuffleFrom(
      mask, var, start + (srcLane & (width - 1)), true);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  int start = folio::cuda_emu::detail::segmentStart(width);
  int src = int(folio::cuda_emu::laneId()) - int(delta);
  return folio::cuda_emu::detail::shuffleFrom(mask, var, src, src >= start);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  int start = folio::cuda_emu::detail::segmentStart(width);
  int src = int(folio::cuda_emu::laneId()) + int(delta);
  return folio::cuda_emu::detail::shuffleFrom(mask, var, src,
                                              src < start + width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32) {
  int start = folio::cuda_emu::detail::segmentStart(width);
  int src = int(folio::cuda_emu::laneId()) ^ laneMask;
  // Earlier segments may be read; later ones give the caller's own value.
  return folio::cuda_emu::detail::shuffleFrom(mask, var, src,
                                              src < start + width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  auto e = folio::cuda_emu::detail::exchange(mask, int(predicate != 0));
  unsigned bits = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((e.arrived & (1u << lane)) && e.get(lane))
      bits |= 1u << lane;
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) != 0;
}
inline int __all_sync(unsigned mask, int predicate) {
  unsigned lanes = mask & folio::cuda_emu::liveLanes();
  return (__ballot_sync(mask, predicate) & lanes) == lanes;
}
template <typename T> unsigned __match_any_sync(unsigned mask, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8,
                "__match_any_sync takes a 32- or 64-bit value");
  auto e = folio::cuda_emu::detail::exchange(mask, value);
  unsigned bits = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((e.arrived & (1u << lane)) && e.get(lane) == value)
      bits |= 1u << lane;
  return bits;
}

namespace folio::cuda_emu::detail {
template <typename T, typename Op> T reduceLanes(unsigned mask, T v, Op op) {
  auto e = exchange(mask, v);
  bool first = true;
  T acc{};
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (!(e.arrived & (1u << lane)))
      continue;
    acc = first ? e.get(lane) : op(acc, e.get(lane));
    first = false;
  }
  return acc;
}
} // namespace folio::cuda_emu::detail

#define FOLIO_EMU_REDUCE(NAME, EXPR)                                           \
  inline unsigned NAME(unsigned mask, unsigned v) {                            \
    return folio::cuda_emu::detail::reduceLanes(                               \
        mask, v, [](unsigned a, unsigned b) { return EXPR; });                 \
  }                                                                            \
  inline int NAME(unsigned mask, int v) {                                      \
    return folio::cuda_emu::detail::reduceLanes(                               \
        mask, v, [](int a, int b) { return EXPR; });                           \
  }
// Two's-complement wrap-around for the sum, as the hardware does.
FOLIO_EMU_REDUCE(__reduce_add_sync, decltype(a)(unsigned(a) + unsigned(b)))
FOLIO_EMU_REDUCE(__reduce_min_sync, a < b ? a : b)
FOLIO_EMU_REDUCE(__reduce_max_sync, a > b ? a : b)
#undef FOLIO_EMU_REDUCE
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) {
  return folio::cuda_emu::detail::reduceLanes(
      mask, v, [](unsigned a, unsigned b) { return a & b; });
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) {
  return folio::cuda_emu::detail::reduceLanes(
      mask, v, [](unsigned a, unsigned b) { return a | b; });
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) {
  return folio::cuda_emu::detail::reduceLanes(
      mask, v, [](unsigned a, unsigned b) { return a ^ b; });
}

// --- Atomics (real ones: blocks may run on several workers) ------------------

namespace folio::cuda_emu::detail {
template <typename T, typename F> T casLoop(T *address, F update) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "atomics on 2-, 4- or 8-byte types");
  using Bits = std::conditional_t<
      sizeof(T) == 2, uint16_t,
      std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  Bits *p = reinterpret_cast<Bits *>(address);
  Bits old = __atomic_load_n(p, __ATOMIC_RELAXED), desired;
  T oldValue;
  do {
    std::memcpy(static_cast<void *>(&oldValue), &old, sizeof(T));
    T next = update(oldValue);
    std::memcpy(&desired, static_cast<const void *>(&next), sizeof(T));
  } while (!__atomic_compare_exchange_n(p, &old, desired, true,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return oldValue;
}
} // namespace folio::cuda_emu::detail

template <typename T> T atomicAdd(T *address, T value) {
  if constexpr (std::is_integral_v<T>)
    return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
  else
    return folio::cuda_emu::detail::casLoop(
        address, [&](T old) { return T(old + value); });
}
template <typename T> T atomicSub(T *address, T value) {
  return __atomic_fetch_sub(address, value, __ATOMIC_SEQ_CST);
}
template <typename T> T atomicMax(T *address, T value) {
  return folio::cuda_emu::detail::casLoop(
      address, [&](T old) { return old > value ? old : value; });
}
template <typename T> T atomicMin(T *address, T value) {
  return folio::cuda_emu::detail::casLoop(
      address, [&](T old) { return old < value ? old : value; });
}
template <typename T> T atomicExch(T *address, T value) {
  return folio::cuda_emu::detail::casLoop(address, [&](T) { return value; });
}
template <typename T> T atomicCAS(T *address, T compare, T value) {
  __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return compare; // the old value either way
}

// --- Loads, bit tricks and fast math -----------------------------------------

template <typename T> T __ldg(const T *p) { return *p; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i)
    r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline int __float_as_int(float f) {
  int x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float __uint_as_float(unsigned x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) {
  return x > 1.0f ? 1.0f : x > 0.0f ? x : 0.0f; // NaN -> 0 as on the device
}
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
// Host C++ here is compiled without FMA contraction, so these round once
// each, as the device intrinsics promise.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }

// glibc declares these but does not export them: calls would compile and
// then fail to link. The device versions are approximations; tests compare
// with tolerances.
inline float folio_emu_expf(float x) { return std::exp(x); }
inline float folio_emu_logf(float x) { return std::log(x); }
inline float folio_emu_log2f(float x) { return std::log2(x); }
inline float folio_emu_powf(float x, float y) { return std::pow(x, y); }
inline float folio_emu_sinf(float x) { return std::sin(x); }
inline float folio_emu_cosf(float x) { return std::cos(x); }
#define __expf folio_emu_expf
#define __logf folio_emu_logf
#define __log2f folio_emu_log2f
#define __powf folio_emu_powf
#define __sinf folio_emu_sinf
#define __cosf folio_emu_cosf

// --- Launch -----------------------------------------------------------------

namespace folio::cuda_emu {

/// Runs kernel(args...) on every thread of the grid (the <<<>>> of the
/// emulation). Arguments are copied once, as a launch copies them.
template <typename... P, typename... A>
void launch(const LaunchConfig &config, void (*kernel)(P...), A &&...args) {
  static_assert(sizeof...(P) == sizeof...(A), "wrong number of arguments");
  struct Call {
    void (*kernel)(P...);
    std::tuple<std::decay_t<P>...> args;
  } call{kernel, std::tuple<std::decay_t<P>...>(std::forward<A>(args)...)};
  launchGrid(
      config,
      [](void *p) {
        Call &c = *static_cast<Call *>(p);
        std::apply(c.kernel, c.args);
      },
      &call);
}

} // namespace folio::cuda_emu

#endif // FOLIO_CODEGEN_CUDA_EMULATION_EMULATION_H
