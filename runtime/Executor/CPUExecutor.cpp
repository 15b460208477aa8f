//===- CPUExecutor.cpp - Interprets a plan with the CPU kernels -----------===//
//
// Steps run in plan order over a table of run-time tensors indexed by value
// slot. Shapes are whatever the inputs of this batch make them: shape
// arithmetic steps compute on real dims, so one loaded plan serves every
// token count. After each step the results are checked against the plan's
// static types, which turns a lowering bug into a message naming the step
// instead of silent garbage.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/Executor.h"
#include "runtime/Executor/FusedKernels.h"
#include "runtime/Executor/KiviResidency.h"
#include "runtime/Executor/RunVerify.h"
#include "runtime/Executor/StepKernel.h"
#include "runtime/Plan/VerifyEntries.h"
#include "runtime/Plan/VerifyWeights.h"

#include "codegen/CPU/Linear.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sys/mman.h>
#include <tuple>

namespace folio::exec {
namespace {

struct CacheStorage {
  cpu::KVCacheView view;
  std::shared_ptr<void> k, v, kParams, vParams;
};

class CPUExecutor final : public Executor {
public:
  explicit CPUExecutor(const ExecutorOptions &o) : options(o) {
    if (o.numThreads)
      sizedPool = &cpu::ThreadPool::shared(o.numThreads);
  }

  const char *deviceName() const override { return "cpu"; }

  Status load(std::shared_ptr<const plan::Plan> p) override {
    plan = std::move(p);
    constants.assign(plan->values.size(), Tensor());
    for (const plan::Constant &c : plan->constants) {
      const plan::ValueInfo &info = plan->values[size_t(c.value)];
      Tensor t;
      t.type = info.type;
      t.shape = info.dims;
      t.data = const_cast<uint8_t *>(plan->blob.data() + c.offset);
      constants[size_t(c.value)] = t;
    }
    // Weight operands the compiler stored packed have no tensor: their
    // steps' kernels read the plan's stored weights (FolioOps.cpp), whose
    // records are checked here too for plans that never went through a
    // file (readPlan validates the others).
    if (Status s = plan::validateStoredWeights(*plan); !s)
      return s;
    // Per step and operand, not per value: another step reading the same
    // value (a crafted plan may, after releasing it) still needs a tensor.
    storedOperand.assign(plan->steps.size(), {});
    for (const plan::StoredWeight &w : plan->weights) {
      std::vector<bool> &stored = storedOperand[size_t(w.step)];
      stored.resize(plan->steps[size_t(w.step)].operands.size(), false);
      for (int32_t i = 0; i < w.numOperands; ++i)
        stored[size_t(w.operand + i)] = true;
    }
    work = constants;
    transient.clear();
    {
      std::vector<bool> isConstant(plan->values.size(), false);
      for (const plan::Constant &c : plan->constants)
        isConstant[size_t(c.value)] = true;
      for (size_t id = 0; id < isConstant.size(); ++id)
        if (!isConstant[id])
          transient.push_back(int32_t(id));
    }
    kernels.clear();
    states.clear();
    // The verify entries are checked here, at load, so that verify() never
    // meets one it cannot run.
    if (Status s = plan::validateEntries(*plan); !s)
      return s;
    if (plan->kernels.empty() && !plan->steps.empty())
      return Status::invalidArgument(
          "the plan has steps but no kernels (recompile it with folioc)");
    for (size_t i = 0; i < plan->steps.size(); ++i) {
      const plan::Step &step = plan->steps[i];
      const StepKernel *k = findCPUKernel(step.kind);
      if (!k)
        return Status::invalidArgument(
            "the CPU executor has no kernel for step kind '" + step.kind +
            "' (node '" + step.name + "')");
      int n = int(step.operands.size());
      if (n < k->minOperands || n > k->maxOperands)
        return Status::invalidArgument(step.kind + " '" + step.name +
                                       "': " + std::to_string(n) +
                                       " operands is not a valid arity");
      if (step.results.size() != size_t(k->numResults))
        return Status::invalidArgument(
            step.kind + " '" + step.name +
            "': " + std::to_string(step.results.size()) + " results; a " +
            step.kind + " step has " + std::to_string(k->numResults));
      // The required operands (all but trailing optional ones) must be
      // present: kernels read them without asking.
      for (int i = 0; i < k->minOperands; ++i)
        if (step.operands[size_t(i)] < 0)
          return Status::invalidArgument(step.kind + " '" + step.name +
                                         "': operand " + std::to_string(i) +
                                         " is required but absent");
      std::unique_ptr<StepState> state;
      PrepareContext ctx{step, *plan, constants,
                         options.weights == WeightType::F32 ? cpu::DType::F32
                                                            : cpu::DType::BF16};
      if (k->prepare) {
        if (Status s = k->prepare(ctx, state); !s)
          return s;
      }
      kernels.push_back(k);
      states.push_back(std::move(state));
    }
    arena = BufferArena();
    arena.plan = plan.get();
    fused.assign(plan->kernels.size(), nullptr);
    fusedFirst.assign(plan->kernels.size(), 0);
    if (options.fusedKernels)
      for (size_t k = 0; k < plan->kernels.size(); ++k)
        fused[k] = findFusedCPUKernel(*plan, plan->kernels[k], &fusedFirst[k]);
    resetProfile();
    layout = {};
    cacheFormats.assign(plan->values.size(), cpu::KVCacheView());
    for (const plan::Argument &a : plan->inputs) {
      const plan::ValueInfo &v = plan->values[size_t(a.value)];
      if (v.kind != plan::ValueInfo::Kind::KVCache)
        continue;
      Expected<cpu::KVCacheView> format = cacheFormat(a.name, v);
      if (!format)
        return format.status();
      cacheFormats[size_t(a.value)] = *format;
      ++layout.numLayers;
      layout.blockSize = v.blockSize;
      layout.bytesPerBlock +=
          v.blockSize *
          int64_t(cpu::kvBytesPerToken(format->dtype, v.kvHeads, v.headDim,
                                       format->group, v.blockSize));
      layout.bytesPerBlock16 += v.blockSize * 2 * v.kvHeads * v.headDim * 2;
    }
    return Status::ok();
  }

  /// The kernels' view of a plan cache: its dtype and where its scales
  /// live. Layouts the CPU kernels do not implement are refused here, at
  /// load, naming the cache.
  static Expected<cpu::KVCacheView> cacheFormat(const std::string &name,
                                                const plan::ValueInfo &v) {
    using Scale = plan::ValueInfo::KVScale;
    cpu::KVCacheView f;
    f.blockSize = v.blockSize;
    f.numKvHeads = v.kvHeads;
    f.headDim = v.headDim;
    auto refuse = [&](const std::string &why) {
      return Status::invalidArgument("KV cache '" + name + "' (" +
                                     plan::elemTypeName(v.type) + "): " + why);
    };
    switch (v.type) {
    case plan::ElemType::F32:
      f.dtype = cpu::DType::F32;
      break;
    case plan::ElemType::F16:
      f.dtype = cpu::DType::F16;
      break;
    case plan::ElemType::BF16:
      f.dtype = cpu::DType::BF16;
      break;
    case plan::ElemType::F8E4M3:
    case plan::ElemType::F8E5M2:
      f.dtype = v.type == plan::ElemType::F8E4M3 ? cpu::DType::FP8E4M3
                                                 : cpu::DType::FP8E5M2;
      if (v.kvScale != Scale::PerHead)
        return refuse("the CPU kernels take fp8 caches with per-head static "
                      "scales only");
      break;
    case plan::ElemType::I8:
      f.dtype = cpu::DType::I8;
      if (v.kvScale == Scale::PerTokenHead)
        f.group = v.headDim;
      else if (v.kvScale == Scale::PerTokenGroup)
        f.group = v.kvGroup;
      else
        return refuse("the CPU kernels take int8 caches with per-token "
                      "scales (per_token_head or per_token_group) only");
      break;
    case plan::ElemType::I4:
      f.dtype = cpu::DType::I4;
      if (v.kvScale != Scale::PerTokenGroup)
        return refuse("the CPU kernels take int4 caches with per-token "
                      "group scales only");
      f.group = v.kvGroup;
      break;
    case plan::ElemType::I2:
      f.dtype = cpu::DType::I2;
      if (v.kvScale != Scale::Kivi)
        return refuse("the CPU kernels take int2 caches as KIVI only");
      f.group = v.kvGroup;
      f.residual = v.kvResidual;
      break;
    default:
      return refuse("not a KV cache dtype the CPU executor supports (f32, "
                    "f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2)");
    }
    return f;
  }

  KVCacheLayout kvCacheLayout() const override { return layout; }

  Status allocateKVCache(int64_t numBlocks) override {
    if (!plan)
      return Status::invalidArgument("no plan is loaded");
    if (numBlocks < 2)
      return Status::invalidArgument("the KV cache needs at least 2 blocks");
    caches.assign(plan->values.size(), nullptr);
    storage.clear();
    storage.reserve(plan->inputs.size());
    for (const plan::Argument &a : plan->inputs) {
      const plan::ValueInfo &v = plan->values[size_t(a.value)];
      if (v.kind != plan::ValueInfo::Kind::KVCache)
        continue;
      CacheStorage cs;
      cs.view = cacheFormats[size_t(a.value)];
      cs.view.numBlocks = numBlocks;
      struct Pool {
        std::shared_ptr<void> *mem;
        size_t bytes;
      };
      for (Pool pool :
           {Pool{&cs.k, cs.view.poolBytes()}, Pool{&cs.v, cs.view.poolBytes()},
            Pool{&cs.kParams, cs.view.kParamPoolBytes()},
            Pool{&cs.vParams, cs.view.vParamPoolBytes()}}) {
        if (pool.bytes == 0)
          continue;
        *pool.mem = allocatePool(pool.bytes);
        if (!*pool.mem)
          return Status::resourceExhausted("cannot allocate the KV cache (" +
                                           std::to_string(pool.bytes) +
                                           " bytes)");
      }
      cs.view.kParams = cs.kParams.get();
      cs.view.vParams = cs.vParams.get();
      cs.view.k = cs.k.get();
      cs.view.v = cs.v.get();
      storage.push_back(std::move(cs));
      caches[size_t(a.value)] = &storage.back().view;
    }
    // int2 (KIVI) caches share one residency table: block ids are the same
    // in every layer.
    kiviCaches.clear();
    for (CacheStorage &cs : storage)
      if (cs.view.dtype == cpu::DType::I2) {
        if (!kiviCaches.empty() &&
            (cs.view.residual != kiviCaches[0]->residual ||
             cs.view.blockSize != kiviCaches[0]->blockSize))
          return Status::invalidArgument(
              "int2 KV caches with different residual windows or block "
              "sizes are not supported");
        kiviCaches.push_back(&cs.view);
      }
    if (!kiviCaches.empty())
      kivi.reset(numBlocks, kiviCaches[0]->blockSize, kiviCaches[0]->residual);
    return Status::ok();
  }

  Status recordLinearInputs(bool on) override {
    linearInputs = on ? std::make_unique<LinearInputRecorder>() : nullptr;
    return Status::ok();
  }

  plan::LinearInputAbsMax linearInputAbsMax() const override {
    return linearInputs ? linearInputs->absMax() : plan::LinearInputAbsMax();
  }

  Expected<KVCacheAbsMax> kvCacheAbsMax() const override {
    if (storage.empty())
      return Status::invalidArgument("no KV cache is allocated");
    KVCacheAbsMax r;
    for (const CacheStorage &cs : storage) {
      const cpu::KVCacheView &c = cs.view;
      if (c.dtype != cpu::DType::F32)
        return Status::invalidArgument(
            std::string("reading KV ranges needs f32 caches, not ") +
            cpu::dtypeName(c.dtype));
      if (r.layers == 0)
        r.kvHeads = c.numKvHeads;
      else if (c.numKvHeads != r.kvHeads)
        return Status::invalidArgument(
            "layers with different KV head counts (" +
            std::to_string(r.kvHeads) + " and " + std::to_string(c.numKvHeads) +
            ") are not supported");
      ++r.layers;
      int64_t slots = c.numBlocks * c.blockSize;
      for (const void *pool : {c.k, c.v}) {
        const float *x = static_cast<const float *>(pool);
        std::vector<float> m(size_t(c.numKvHeads), 0.0f);
        for (int64_t s = 0; s < slots; ++s)
          for (int64_t h = 0; h < c.numKvHeads; ++h) {
            const float *row = x + (s * c.numKvHeads + h) * c.headDim;
            for (int64_t d = 0; d < c.headDim; ++d) {
              float a = std::fabs(row[d]);
              // A NaN is kept: calibration must not hide it.
              if (!std::isnan(m[size_t(h)]) && !(a <= m[size_t(h)]))
                m[size_t(h)] = a;
            }
          }
        r.values.insert(r.values.end(), m.begin(), m.end());
      }
    }
    return r;
  }

  Status forward(const ForwardBatch &batch, std::vector<float> &logits,
                 int64_t &vocab) override {
    if (!plan || caches.empty())
      return Status::invalidArgument(
          "forward needs a loaded plan and an allocated KV cache");
    // One value table for the executor's life: constants stay bound, the
    // rest is cleared before (a failed step may have left values and
    // scratch slots) and after each forward, instead of copying the whole
    // table per forward (876 slots, 304 constants with heap-allocated
    // shapes, for the 110M model).
    if (!kiviCaches.empty())
      if (Status s = kivi.prepare(batch, kiviCaches); !s)
        return s;
    std::vector<Tensor> &values = work;
    values.resize(plan->values.size());
    clearTransient();
    if (Status s = bindInputs(batch, values); !s)
      return s;
    // The compiler's buffers, sized for this step's counts (grown only).
    stepCounts = {int64_t(batch.tokens.size()),
                  int64_t(batch.logitsIndices.size()),
                  int64_t(batch.seqLens.size())};
    arena.size(stepCounts.tokens, stepCounts.rows, stepCounts.seqs);
    cpu::ThreadPool &pool = sizedPool ? *sizedPool : cpu::ThreadPool::global();
    // A plain loop over the compiler's kernels: a fused implementation
    // where the CPU has one for the kernel, else its steps in order.
    for (size_t k = 0; k < plan->kernels.size(); ++k) {
      const plan::Kernel &kernel = plan->kernels[k];
      if (fused[k]) {
        if (Status s = runFused(k, values, pool); !s)
          return s;
      } else {
        for (int32_t i = kernel.firstStep;
             i < kernel.firstStep + kernel.numSteps; ++i)
          if (Status s = runStep(size_t(i), values, pool); !s)
            return s;
      }
      for (int32_t id : kernel.releases)
        values[size_t(id)] = Tensor();
    }
    if (plan->outputs.size() != 1)
      return Status::invalidArgument("the entry must return one logits tensor");
    const Tensor &out = values[size_t(plan->outputs[0])];
    if (out.type != plan::ElemType::F32 || out.rank() != 2)
      return Status::internal("logits must be f32 [rows, vocab], got " +
                              shapeString(out.shape));
    // One row per logits index: the engine reads exactly those.
    if (out.shape[0] != stepCounts.rows)
      return Status::invalidArgument(
          "the plan's logits " + shapeString(out.shape) + " have " +
          std::to_string(out.shape[0]) + " rows for " +
          std::to_string(stepCounts.rows) + " logits indices");
    vocab = out.shape[1];
    logits.assign(out.as<float>(), out.as<float>() + out.numel());
    values.resize(plan->values.size());
    clearTransient();
    return Status::ok();
  }

  Status verify(const VerifyBatch &batch, std::vector<int32_t> &accepted,
                std::vector<int32_t> &tokens) override {
    if (!plan)
      return Status::invalidArgument("verify needs a loaded plan");
    cpu::ThreadPool &pool = sizedPool ? *sizedPool : cpu::ThreadPool::global();
    return runVerifyEntry(*plan, batch, accepted, tokens, pool);
  }

  Status runStep(size_t i, std::vector<Tensor> &values, cpu::ThreadPool &pool) {
    using Clock = std::chrono::steady_clock;
    const plan::Step &step = plan->steps[i];
    StepContext ctx{step, values, caches, states[i].get(), pool};
    ctx.weightStorage = weightStorage();
    ctx.stepIndex = int32_t(i);
    ctx.linearInputs = linearInputs.get();
    ctx.arena = options.plannedBuffers ? &arena : nullptr;
    const std::vector<bool> &stored = storedOperand[i];
    for (size_t k = 0; k < step.operands.size(); ++k) {
      int32_t id = step.operands[k];
      if (id >= 0 && !caches[size_t(id)] && !values[size_t(id)].data &&
          values[size_t(id)].numel() != 0 && !(k < stored.size() && stored[k]))
        return ctx.error("an operand has no value (the plan uses a value "
                         "before defining it, or after releasing it)");
    }
    Clock::time_point start;
    bool timed = options.profile && !inFused;
    if (timed)
      start = Clock::now();
    if (Status s = kernels[i]->run(ctx); !s)
      return s;
    if (options.profile && inFused)
      fusedFlops += ctx.flops;
    if (timed) {
      KindProfile &k = stepTimes[i];
      k.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      ++k.calls;
      k.flops += ctx.flops;
    }
    return checkResults(ctx);
  }

  /// Runs kernel `k` through its fused implementation; its time is booked
  /// under the kernel's kind, steps it runs on the way included.
  Status runFused(size_t k, std::vector<Tensor> &values,
                  cpu::ThreadPool &pool) {
    using Clock = std::chrono::steady_clock;
    const plan::Kernel &kernel = plan->kernels[k];
    FusedContext ctx{*plan,
                     kernel,
                     values,
                     pool,
                     [&](size_t i) { return runStep(i, values, pool); },
                     [&](int32_t id) {
                       return std::find(kernel.outputs.begin(),
                                        kernel.outputs.end(),
                                        id) != kernel.outputs.end();
                     },
                     options.plannedBuffers ? &arena : nullptr,
                     fusedFirst[k]};
    Clock::time_point start;
    if (options.profile)
      start = Clock::now();
    inFused = true;
    fusedFlops = 0;
    Status status = fused[k]->run(ctx);
    inFused = false;
    if (!status)
      return status;
    if (options.profile) {
      KindProfile &t = kernelTimes[k];
      t.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      ++t.calls;
      t.flops += fusedFlops;
    }
    for (int32_t i = kernel.firstStep; i < kernel.firstStep + kernel.numSteps;
         ++i) {
      StepContext check{plan->steps[size_t(i)], values, caches, nullptr, pool};
      for (int32_t id : plan->steps[size_t(i)].results)
        if (values[size_t(id)].data || values[size_t(id)].rank())
          if (Status s = checkOne(check, id); !s)
            return s;
    }
    return Status::ok();
  }

  cpu::DType weightStorage() const {
    return options.weights == WeightType::F32 ? cpu::DType::F32
                                              : cpu::DType::BF16;
  }

  /// Drops every value that is not a constant (their storage goes back to
  /// the block cache).
  void clearTransient() {
    for (int32_t id : transient)
      if (work[size_t(id)].data || !work[size_t(id)].shape.empty())
        work[size_t(id)] = Tensor();
  }

  int64_t linearWeightBytes() const override {
    int64_t bytes = 0;
    for (const auto &st : states)
      if (auto *w = dynamic_cast<const WeightState *>(st.get()))
        bytes += w->weightBytes();
    return bytes;
  }

  std::vector<KindProfile> profile() const override {
    // Summed per step while running (no string-keyed lookup per step),
    // per kind here.
    std::map<std::string, KindProfile> byKind;
    for (size_t i = 0; i < stepTimes.size(); ++i) {
      const KindProfile &t = stepTimes[i];
      if (!t.calls)
        continue;
      KindProfile &k = byKind[plan->steps[i].kind];
      k.seconds += t.seconds;
      k.calls += t.calls;
      k.flops += t.flops;
    }
    for (size_t i = 0; i < kernelTimes.size(); ++i) {
      const KindProfile &t = kernelTimes[i];
      if (!t.calls)
        continue;
      KindProfile &k = byKind[plan->kernels[i].kind + " (fused)"];
      k.seconds += t.seconds;
      k.calls += t.calls;
      k.flops += t.flops;
    }
    std::vector<KindProfile> out;
    for (const auto &[kind, k] : byKind)
      out.push_back({kind, k.seconds, k.calls, k.flops});
    std::sort(out.begin(), out.end(),
              [](const KindProfile &a, const KindProfile &b) {
                return a.seconds > b.seconds;
              });
    return out;
  }

  void resetProfile() override {
    stepTimes.assign(plan ? plan->steps.size() : 0, KindProfile());
    kernelTimes.assign(plan ? plan->kernels.size() : 0, KindProfile());
  }

private:
  /// One zeroed K or V pool. Attention reads a sequence's blocks scattered
  /// over the pool, a TLB miss per block with 4 KiB pages; pools of 2 MiB
  /// or more are 2 MiB-aligned and advised as huge pages (THP in `madvise`
  /// mode, as on these machines, only backs advised ranges), before the
  /// zeroing touches them.
  static std::shared_ptr<void> allocatePool(size_t bytes) {
    constexpr size_t huge = size_t(2) << 20;
    size_t align = bytes >= huge ? huge : 64;
    size_t rounded = (bytes + align - 1) / align * align;
    void *mem = std::aligned_alloc(align, rounded);
    if (!mem)
      return nullptr;
#ifdef MADV_HUGEPAGE
    if (align == huge)
      madvise(mem, rounded, MADV_HUGEPAGE);
#endif
    std::memset(mem, 0, bytes);
    return std::shared_ptr<void>(mem, [](void *m) { std::free(m); });
  }

  Status bindInputs(const ForwardBatch &b, std::vector<Tensor> &values) {
    int64_t t = int64_t(b.tokens.size());
    int64_t s = int64_t(b.seqLens.size());
    if (Status st = checkForwardBatch(b); !st)
      return st;
    auto i32 = [](const std::vector<int32_t> &v, Shape shape) {
      Tensor x = Tensor::allocate(ElemType::I32, std::move(shape));
      if (!v.empty()) // an empty vector's data() may be null
        std::memcpy(x.data, v.data(), v.size() * 4);
      return x;
    };
    for (const plan::Argument &a : plan->inputs) {
      Tensor x;
      const std::string &n = a.name;
      if (n == "tokens")
        x = i32(b.tokens, {t});
      else if (n == "positions")
        x = i32(b.positions, {t});
      else if (n == "query_start_loc")
        x = i32(b.queryStartLoc, {s + 1});
      else if (n == "seq_lens")
        x = i32(b.seqLens, {s});
      else if (n == "block_tables")
        x = i32(b.blockTables, {s, b.maxBlocks});
      else if (n == "logits_indices")
        x = i32(b.logitsIndices, {int64_t(b.logitsIndices.size())});
      else if (n == "slot_mapping") {
        x = Tensor::allocate(ElemType::I64, {t});
        if (t > 0)
          std::memcpy(x.data, b.slotMapping.data(), size_t(t) * 8);
      } else if (plan->values[size_t(a.value)].kind ==
                 plan::ValueInfo::Kind::KVCache)
        continue;
      else
        return Status::invalidArgument("the plan's input '" + n +
                                       "' is not part of the serving contract");
      if (x.type != plan->values[size_t(a.value)].type)
        return Status::invalidArgument("the plan's input '" + n +
                                       "' has an unexpected element type");
      values[size_t(a.value)] = std::move(x);
    }
    return Status::ok();
  }

  Status checkResults(const StepContext &ctx) const {
    for (int32_t id : ctx.step.results)
      if (Status s = checkOne(ctx, id); !s)
        return s;
    return Status::ok();
  }

  Status checkOne(const StepContext &ctx, int32_t id) const {
    {
      const Tensor &t = ctx.values[size_t(id)];
      const plan::ValueInfo &info = plan->values[size_t(id)];
      bool ok = t.type == info.type && t.rank() == int64_t(info.dims.size());
      // A dynamic dim with a symbol is that count of this step (the
      // compiler sized the value's buffer by it).
      int64_t count = stepCounts.of(info.symbol);
      for (size_t d = 0; ok && d < info.dims.size(); ++d)
        ok = info.dims[d] < 0 ? count < 0 || t.shape[d] == count
                              : info.dims[d] == t.shape[d];
      if (!ok)
        return ctx.error(
            std::string("produced ") + plan::elemTypeName(t.type) + " " +
            shapeString(t.shape) + " where the plan expects " +
            plan::elemTypeName(info.type) + " " + shapeString(info.dims) +
            (count < 0 ? std::string()
                       : std::string(" (-1: the step's ") +
                             plan::dimSymbolName(info.symbol) + ", " +
                             std::to_string(count) + ")"));
    }
    return Status::ok();
  }

  /// The current forward's token, logits-row and sequence counts: what a
  /// value's dynamic dim counts (ValueInfo::symbol).
  struct StepCounts {
    int64_t tokens = -1, rows = -1, seqs = -1;
    /// The count of `symbol`, or -1 (None: any extent).
    int64_t of(plan::DimSymbol symbol) const {
      switch (symbol) {
      case plan::DimSymbol::Tokens:
        return tokens;
      case plan::DimSymbol::Rows:
        return rows;
      case plan::DimSymbol::Seqs:
        return seqs;
      case plan::DimSymbol::None:
        break;
      }
      return -1;
    }
  };
  StepCounts stepCounts;

  ExecutorOptions options;
  /// The process-wide pool of options.numThreads threads, if set.
  cpu::ThreadPool *sizedPool = nullptr;
  /// Per step (kind left empty), when profiling.
  std::vector<KindProfile> stepTimes;
  std::shared_ptr<const plan::Plan> plan;
  std::vector<Tensor> constants;
  /// Values that are weights stored packed in the plan (Plan::weights).
  /// Per step, which operands the compiler stored packed (their kernels
  /// read Plan::weights, not a tensor).
  std::vector<std::vector<bool>> storedOperand;
  /// The value table of a step: constants plus this step's values.
  std::vector<Tensor> work;
  /// Ids of the values that are not constants.
  std::vector<int32_t> transient;
  std::vector<const StepKernel *> kernels;
  std::vector<std::unique_ptr<StepState>> states;
  /// Set while recording linear inputs (calibration).
  std::unique_ptr<LinearInputRecorder> linearInputs;
  /// Storage for the compiler's buffers, reused across forwards.
  BufferArena arena;
  /// Per plan kernel: its fused implementation, or null (steps in order),
  /// and the first step that implementation covers.
  std::vector<const FusedKernel *> fused;
  std::vector<int32_t> fusedFirst;
  /// Per plan kernel run fused, when profiling; and whether one is running
  /// (its steps are then booked to it, not to their kinds).
  std::vector<KindProfile> kernelTimes;
  bool inFused = false;
  double fusedFlops = 0;
  std::vector<CacheStorage> storage;
  std::vector<cpu::KVCacheView *> caches;
  /// Each cache's dtype and scale layout, by value slot (from load).
  std::vector<cpu::KVCacheView> cacheFormats;
  /// The int2 (KIVI) caches and their full-precision window.
  std::vector<cpu::KVCacheView *> kiviCaches;
  KiviResidency kivi;
  KVCacheLayout layout;
};

} // namespace

std::unique_ptr<Executor> createCPUExecutor(const ExecutorOptions &options) {
  return std::make_unique<CPUExecutor>(options);
}

Status checkForwardBatch(const ForwardBatch &b) {
  int64_t t = int64_t(b.tokens.size());
  int64_t s = int64_t(b.seqLens.size());
  if (int64_t(b.positions.size()) != t || int64_t(b.slotMapping.size()) != t ||
      int64_t(b.queryStartLoc.size()) != s + 1 ||
      int64_t(b.blockTables.size()) != s * b.maxBlocks)
    return Status::invalidArgument(
        "the batch arrays disagree in length (tokens " + std::to_string(t) +
        ", sequences " + std::to_string(s) + ")");
  return Status::ok();
}

Expected<WeightType> parseWeightType(const std::string &name) {
  if (name == "f32")
    return WeightType::F32;
  if (name == "bf16")
    return WeightType::BF16;
  if (name == "f16")
    return WeightType::F16;
  return Status::invalidArgument("'" + name + "' is not one of f32, bf16, f16");
}

const char *weightTypeName(WeightType t) {
  switch (t) {
  case WeightType::F32:
    return "f32";
  case WeightType::BF16:
    return "bf16";
  case WeightType::F16:
    return "f16";
  }
  return "?";
}

} // namespace folio::exec
