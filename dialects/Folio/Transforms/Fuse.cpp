//===- Fuse.cpp - Group the lowered entry into folio.kernel regions -------===//
//
// Kernel boundaries are decided here, once, for every backend: each
// folio.kernel region is one launch on a GPU and one call on the CPU, and
// the plan is a list of kernels. The policy (docs/fusion.md) groups
//   - a residual add with the norm that reads it   -> add_rms_norm /
//   add_layer_norm
//   - the rotary of the keys with the cache write  -> rotary_kv_write
//   - a linear with the pointwise ops after it     -> linear_epilogue
//   - pointwise chains without a linear            -> elementwise
//   - the logits gather with the norm, lm_head and
//     pointwise ops after it                       -> gather_rows_linear
// and gives every other op (paged attention included) a kernel of its own,
// named after it. Views (folio.reshape, folio.slice) carry no work of their
// own: each is cloned into the kernels that read it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Folio/IR/ConstantData.h"
#include "dialects/Folio/IR/FolioOps.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "folio-fuse"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOFUSEPASS
#include "dialects/Folio/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

bool isView(Operation *op) { return isa<ReshapeOp, SliceOp>(op); }
bool isPointwise(Operation *op) { return isa<BinaryOp, UnaryOp, CastOp>(op); }
/// Constants and the quantized weights over them: data, not work.
bool isData(Operation *op) {
  return op && (isa<arith::ConstantOp>(op) || isWeightDequantize(op));
}
bool isConstant(Value v) { return isData(v.getDefiningOp()); }

/// The op that computes `v` once views are looked through (null for block
/// arguments and constants).
Operation *producerThroughViews(Value v) {
  Operation *def = v.getDefiningOp();
  while (def && isView(def))
    def = def->getOperand(0).getDefiningOp();
  if (isData(def))
    return nullptr;
  return def;
}

/// Users of `v`, views looked through.
void usersThroughViews(Value v, SmallVectorImpl<Operation *> &out) {
  for (Operation *user : v.getUsers()) {
    if (isView(user))
      usersThroughViews(user->getResult(0), out);
    else
      out.push_back(user);
  }
}

struct Group {
  std::string name;
  SmallVector<Operation *> ops; // program order
};

class Fuser {
public:
  explicit Fuser(func::FuncOp func) : func(func) {}

  LogicalResult run() {
    for (Operation &op : func.getBody().front())
      if (!isData(&op) && !isa<func::ReturnOp>(op) && !isView(&op))
        order.push_back(&op);
    for (auto [i, op] : llvm::enumerate(order))
      position[op] = i;
    formGroups();
    for (Group &g : groups)
      if (failed(build(g)))
        return failure();
    // Views were cloned into the kernels that read them; the originals go,
    // but one read outside any kernel (returned) becomes a kernel itself.
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(func.getBody().front().getOperations()))) {
      if (!isView(&op))
        continue;
      if (op.use_empty()) {
        op.erase();
        continue;
      }
      if (llvm::any_of(op.getUsers(),
                       [](Operation *u) { return !isView(u); })) {
        Group g{op.getName().stripDialect().str(), {&op}};
        if (failed(build(g)))
          return failure();
      }
    }
    return success();
  }

private:
  bool taken(Operation *op) const { return groupOf.count(op); }

  void take(Group &g, Operation *op) {
    g.ops.push_back(op);
    groupOf[op] = &g;
  }

  /// Grows `g` with the pointwise ops whose every tensor operand is
  /// computed inside it (or constant): the chain after a linear, or a chain
  /// on its own.
  void growPointwise(Group &g) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t i = 0; i < g.ops.size(); ++i) {
        for (Value result : g.ops[i]->getResults()) {
          SmallVector<Operation *> users;
          usersThroughViews(result, users);
          for (Operation *user : users) {
            if (taken(user) || !isPointwise(user) || !position.count(user))
              continue;
            bool inside = llvm::all_of(user->getOperands(), [&](Value v) {
              if (isConstant(v))
                return true;
              Operation *p = producerThroughViews(v);
              return p && groupOf.lookup(p) == &g;
            });
            if (!inside)
              continue;
            take(g, user);
            changed = true;
          }
        }
      }
    }
    llvm::sort(g.ops, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
  }

  void formGroups() {
    groups.reserve(order.size());
    // Residual add + norm.
    for (Operation *op : order) {
      if (!isa<RMSNormOp, LayerNormOp>(op) || taken(op))
        continue;
      auto add = op->getOperand(0).getDefiningOp<BinaryOp>();
      // Two computed values of one shape (a residual, no broadcast).
      if (!add || taken(add) || add.getKind() != BinaryKind::add ||
          isConstant(add.getLhs()) || isConstant(add.getRhs()) ||
          add.getLhs().getType() != add.getRhs().getType() ||
          add.getLhs().getType() != add.getType())
        continue;
      Group &g =
          newGroup(isa<RMSNormOp>(op) ? "add_rms_norm" : "add_layer_norm");
      take(g, add);
      take(g, op);
    }
    // Rotary of the keys + the cache write.
    for (Operation *op : order) {
      auto write = dyn_cast<KVWriteOp>(op);
      if (!write || taken(write))
        continue;
      Operation *rotary = producerThroughViews(write.getKey());
      if (!rotary || !isa<RotaryOp>(rotary) || taken(rotary))
        continue;
      SmallVector<Operation *> users;
      usersThroughViews(rotary->getResult(0), users);
      if (users.size() != 1)
        continue;
      // The write moves to the rotary (or the rotary to the write): nothing
      // between them may touch the cache.
      Value cache = write.getCache();
      bool touched = llvm::any_of(cache.getUsers(), [&](Operation *u) {
        return u != write && u->getBlock() == write->getBlock() &&
               rotary->isBeforeInBlock(u) && u->isBeforeInBlock(write);
      });
      if (touched)
        continue;
      Group &g = newGroup("rotary_kv_write");
      take(g, rotary);
      take(g, write);
    }
    // The logits rows: gather, then norm / lm_head / pointwise epilogue.
    for (Operation *op : order) {
      auto gather = dyn_cast<GatherRowsOp>(op);
      if (!gather || taken(gather))
        continue;
      Group &g = newGroup("gather_rows_linear");
      take(g, gather);
      Operation *last = gather;
      bool sawLinear = false;
      while (!sawLinear) {
        SmallVector<Operation *> users;
        usersThroughViews(last->getResult(0), users);
        if (users.size() != 1 || taken(users[0]) ||
            !isa<RMSNormOp, LayerNormOp, LinearOp>(users[0]))
          break;
        sawLinear = isa<LinearOp>(users[0]);
        last = users[0];
        take(g, last);
      }
      if (sawLinear)
        growPointwise(g);
      else
        g.name = "gather_rows";
    }
    // Linears with their pointwise epilogue; pointwise chains.
    for (Operation *op : order) {
      if (taken(op))
        continue;
      if (isa<LinearOp>(op)) {
        Group &g = newGroup("linear");
        take(g, op);
        growPointwise(g);
        if (g.ops.size() > 1)
          g.name = "linear_epilogue";
        continue;
      }
      if (isPointwise(op)) {
        Group &g = newGroup("elementwise");
        take(g, op);
        growPointwise(g);
        continue;
      }
    }
    // Everything else on its own, named after the op.
    for (Operation *op : order) {
      if (taken(op))
        continue;
      Group &g = newGroup(op->getName().stripDialect().str());
      take(g, op);
    }
  }

  Group &newGroup(StringRef name) {
    groups.push_back(Group{name.str(), {}});
    return groups.back();
  }

  /// Replaces the group's ops by one folio.kernel.
  LogicalResult build(Group &g) {
    llvm::SmallPtrSet<Operation *, 8> members(g.ops.begin(), g.ops.end());
    // Inputs: values from outside (views traced to their source, so that
    // they are cloned inside), in first-use order.
    llvm::SetVector<Value> inputs;
    SmallVector<Operation *> views; // to clone, producers first
    llvm::SmallPtrSet<Operation *, 8> viewSet;
    std::function<void(Value)> addInput = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (def && members.contains(def))
        return;
      if (def && isView(def)) {
        addInput(def->getOperand(0));
        if (viewSet.insert(def).second)
          views.push_back(def);
        return;
      }
      inputs.insert(v);
    };
    for (Operation *op : g.ops)
      for (Value v : op->getOperands())
        addInput(v);
    // A use stays inside when it is a member, or a view read only from
    // inside (it is cloned in); outputs are results used anywhere else.
    std::function<bool(Operation *)> inside = [&](Operation *u) {
      if (members.contains(u))
        return true;
      return isView(u) && !u->use_empty() &&
             llvm::all_of(u->getUsers(), inside);
    };
    SmallVector<Value> outputs;
    for (Operation *op : g.ops)
      for (Value r : op->getResults())
        if (!llvm::all_of(r.getUsers(), inside))
          outputs.push_back(r);

    // Place the kernel where every input exists and before every external
    // user: at the first op if the inputs allow, else at the last.
    Operation *first = g.ops.front(), *last = g.ops.back();
    Block *block = first->getBlock();
    auto definedBefore = [&](Value v, Operation *at) {
      Operation *def = v.getDefiningOp();
      return !def || def->getBlock() != block || def->isBeforeInBlock(at);
    };
    auto usedAfter = [&](Value r, Operation *at) {
      return llvm::all_of(r.getUsers(), [&](Operation *u) {
        return inside(u) || at->isBeforeInBlock(u) || u->getBlock() != block;
      });
    };
    Operation *at = nullptr;
    if (llvm::all_of(inputs, [&](Value v) { return definedBefore(v, first); }))
      at = first;
    else if (llvm::all_of(outputs, [&](Value r) { return usedAfter(r, last); }))
      at = last;
    if (!at) {
      // No single place fits the group: its ops become kernels of their
      // own (each has one: where the op is).
      if (g.ops.size() == 1)
        return func.emitError()
               << "folio-fuse: no place for kernel '" << g.name << "'";
      for (Operation *op : g.ops) {
        Group alone{op->getName().stripDialect().str(), {op}};
        if (isPointwise(op))
          alone.name = "elementwise";
        if (failed(build(alone)))
          return failure();
      }
      return success();
    }

    OpBuilder b(at);
    if (at == last)
      b.setInsertionPointAfter(last);
    SmallVector<Type> resultTypes;
    for (Value r : outputs)
      resultTypes.push_back(r.getType());
    Location loc = b.getFusedLoc(llvm::to_vector(
        llvm::map_range(g.ops, [](Operation *op) { return op->getLoc(); })));
    auto kernel =
        b.create<KernelOp>(loc, resultTypes, g.name, inputs.getArrayRef());
    Block *bodyBlock = b.createBlock(&kernel.getBody());
    IRMapping map;
    for (Value v : inputs)
      map.map(v, bodyBlock->addArgument(v.getType(), v.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(bodyBlock);
    // Views and the group's ops in program order: producers before users
    // (a view may read a member's result, a member a view's).
    SmallVector<Operation *> body = views;
    body.append(g.ops.begin(), g.ops.end());
    llvm::sort(
        body, [](Operation *a, Operation *c) { return a->isBeforeInBlock(c); });
    for (Operation *op : body)
      inner.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value r : outputs)
      yielded.push_back(map.lookup(r));
    inner.create<YieldOp>(loc, yielded);
    for (auto [r, k] : llvm::zip(outputs, kernel.getResults()))
      r.replaceUsesWithIf(
          k, [&](OpOperand &use) { return !members.contains(use.getOwner()); });
    // Views of the group's results read only from inside were cloned in:
    // the originals go with the group's ops, readers before what they read
    // (reverse program order).
    SmallVector<Operation *> deadViews;
    llvm::SmallPtrSet<Operation *, 8> seen;
    std::function<void(Operation *)> collect = [&](Operation *view) {
      if (!seen.insert(view).second)
        return;
      for (Operation *user : view->getUsers())
        if (isView(user))
          collect(user);
      deadViews.push_back(view);
    };
    for (Operation *op : g.ops)
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!members.contains(user) && isView(user) && inside(user))
            collect(user);
    SmallVector<Operation *> dead = deadViews;
    dead.append(g.ops.begin(), g.ops.end());
    llvm::sort(
        dead, [](Operation *a, Operation *c) { return a->isBeforeInBlock(c); });
    for (Operation *op : llvm::reverse(dead))
      op->erase();
    return success();
  }

  func::FuncOp func;
  SmallVector<Operation *> order;
  llvm::DenseMap<Operation *, size_t> position;
  std::vector<Group> groups; // reserved up front: groupOf points into it
  llvm::DenseMap<Operation *, Group *> groupOf;
};

struct FusePass : mlir::folio::impl::FolioFusePassBase<FusePass> {
  void runOnOperation() override {
    if (failed(Fuser(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
