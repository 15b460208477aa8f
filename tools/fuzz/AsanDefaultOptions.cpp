//===- AsanDefaultOptions.cpp - ASan defaults of the sanitizer builds -----===//
//
// Linked into every target of a build with FOLIO_SANITIZE containing
// `address` (the top-level CMakeLists.txt), fuzzers included.
//
// Folio's instrumented code instantiates LLVM's header-only allocators
// (BumpPtrAllocator, Recycler), which, compiled with ASan, poison each new
// slab and unpoison only what they hand out. The same allocators inside
// MLIR's contexts are also used by Debian's uninstrumented libMLIR, which
// hands out memory from such a slab without unpoisoning it; the next
// intercepted libc call on it (a memmove in RankedTensorType::get, an
// APFloat copy in FloatAttr::get) then reports a use-after-poison that is
// no bug of either. allow_user_poisoning=0 turns the allocators' manual
// poisoning off; ASan's own checks (heap redzones, use after free, stack and
// globals) stay.
//
// handle_sigbus=0: readPlan installs a SIGBUS handler for plans truncated
// while mapped and hands every other SIGBUS to the handler installed before
// it, the default action in production (runtime/Plan/PlanMapping.h); with
// ASan's own handler there, such a SIGBUS became an ASan report and exit
// status 1 instead.
//
// ASAN_OPTIONS in the environment still overrides either.
//
//===----------------------------------------------------------------------===//

extern "C" __attribute__((visibility("default"), used)) const char *
__asan_default_options() {
  return "allow_user_poisoning=0:handle_sigbus=0";
}
