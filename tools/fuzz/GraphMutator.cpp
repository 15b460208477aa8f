//===- GraphMutator.cpp - Graph-level mutations of ONNX models ------------===//

#include "tools/fuzz/GraphMutator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace folio_onnx;

namespace folio::fuzz {
namespace {

using Rng = std::mt19937_64;

/// The op types Folio's handler tables know (compiler/ONNXOps), so that a
/// changed or added node usually reaches shape inference and lowering, plus
/// a few it does not.
struct OpName {
  const char *domain;
  const char *type;
};
constexpr OpName kOps[] = {
    {"", "Abs"},
    {"", "Add"},
    {"", "And"},
    {"", "Attention"},
    {"", "Cast"},
    {"", "Concat"},
    {"", "Constant"},
    {"", "ConstantOfShape"},
    {"", "Cos"},
    {"", "CumSum"},
    {"", "Div"},
    {"", "Equal"},
    {"", "Erf"},
    {"", "Exp"},
    {"", "Expand"},
    {"", "Flatten"},
    {"", "Gather"},
    {"", "Gelu"},
    {"", "Gemm"},
    {"", "Greater"},
    {"", "GreaterOrEqual"},
    {"", "Identity"},
    {"", "IsNaN"},
    {"", "LayerNormalization"},
    {"", "Less"},
    {"", "LessOrEqual"},
    {"", "Log"},
    {"", "MatMul"},
    {"", "Max"},
    {"", "Min"},
    {"", "Mul"},
    {"", "Neg"},
    {"", "Not"},
    {"", "Or"},
    {"", "Pow"},
    {"", "RMSNormalization"},
    {"", "Range"},
    {"", "Reciprocal"},
    {"", "ReduceMax"},
    {"", "ReduceMean"},
    {"", "ReduceSum"},
    {"", "Relu"},
    {"", "Reshape"},
    {"", "RotaryEmbedding"},
    {"", "ScatterND"},
    {"", "Shape"},
    {"", "Sigmoid"},
    {"", "SimplifiedLayerNormalization"},
    {"", "Sin"},
    {"", "Slice"},
    {"", "Softmax"},
    {"", "Split"},
    {"", "Sqrt"},
    {"", "Squeeze"},
    {"", "Sub"},
    {"", "Tanh"},
    {"", "Tile"},
    {"", "Transpose"},
    {"", "Trilu"},
    {"", "Unsqueeze"},
    {"", "Where"},
    {"com.microsoft", "GroupQueryAttention"},
    {"com.microsoft", "MultiHeadAttention"},
    {"com.microsoft", "RotaryEmbedding"},
    {"com.microsoft", "SimplifiedLayerNormalization"},
    {"com.microsoft", "SkipSimplifiedLayerNormalization"},
    // Not handled: the compiler must name them, not crash.
    {"", "Conv"},
    {"", "LSTM"},
    {"com.microsoft", "FastGelu"},
};

/// Attribute names the handlers read, with the kind each usually has.
struct AttrName {
  const char *name;
  AttributeProto::AttributeType type;
};
constexpr AttrName kAttrs[] = {
    {"axis", AttributeProto::INT},
    {"axes", AttributeProto::INTS},
    {"perm", AttributeProto::INTS},
    {"split", AttributeProto::INTS},
    {"to", AttributeProto::INT},
    {"keepdims", AttributeProto::INT},
    {"noop_with_empty_axes", AttributeProto::INT},
    {"allowzero", AttributeProto::INT},
    {"start", AttributeProto::INT},
    {"end", AttributeProto::INT},
    {"epsilon", AttributeProto::FLOAT},
    {"alpha", AttributeProto::FLOAT},
    {"beta", AttributeProto::FLOAT},
    {"transA", AttributeProto::INT},
    {"transB", AttributeProto::INT},
    {"upper", AttributeProto::INT},
    {"exclusive", AttributeProto::INT},
    {"reverse", AttributeProto::INT},
    {"num_heads", AttributeProto::INT},
    {"kv_num_heads", AttributeProto::INT},
    {"q_num_heads", AttributeProto::INT},
    {"rotary_embedding_dim", AttributeProto::INT},
    {"interleaved", AttributeProto::INT},
    {"is_causal", AttributeProto::INT},
    {"scale", AttributeProto::FLOAT},
    {"softcap", AttributeProto::FLOAT},
    {"local_window_size", AttributeProto::INT},
    {"do_rotary", AttributeProto::INT},
    {"rotary_interleaved", AttributeProto::INT},
    {"smooth_softmax", AttributeProto::INT},
    {"approximate", AttributeProto::STRING},
    {"reduction", AttributeProto::STRING},
    {"value", AttributeProto::TENSOR},
    {"value_int", AttributeProto::INT},
    {"value_ints", AttributeProto::INTS},
    {"value_float", AttributeProto::FLOAT},
};

constexpr const char *kStrings[] = {"none", "tanh",  "add", "mul",  "",
                                    "max",  "batch", "seq", "past", "x"};

/// ONNX element types: every supported one and a few refused ones.
constexpr int32_t kDataTypes[] = {TensorProto::FLOAT,     TensorProto::UINT8,
                                  TensorProto::INT8,      TensorProto::UINT16,
                                  TensorProto::INT16,     TensorProto::INT32,
                                  TensorProto::INT64,     TensorProto::BOOL,
                                  TensorProto::FLOAT16,   TensorProto::DOUBLE,
                                  TensorProto::UINT32,    TensorProto::UINT64,
                                  TensorProto::BFLOAT16,  TensorProto::STRING,
                                  TensorProto::COMPLEX64, 17 /* FLOAT8E4M3FN */,
                                  19 /* FLOAT8E5M2 */,    22 /* INT4 */,
                                  0 /* UNDEFINED */,      99 /* not a type */};

size_t elementSize(int32_t type) {
  switch (type) {
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::UINT8:
  case TensorProto::INT8:
  case TensorProto::BOOL:
  case 17:
  case 18:
  case 19:
  case 20:
    return 1;
  case TensorProto::UINT16:
  case TensorProto::INT16:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return 2;
  case TensorProto::INT64:
  case TensorProto::DOUBLE:
  case TensorProto::UINT64:
    return 8;
  default:
    return 0;
  }
}

uint64_t pick(Rng &rng, uint64_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
}

bool chance(Rng &rng, unsigned oneIn) { return pick(rng, oneIn) == 0; }

template <typename T, size_t N> const T &pickOf(Rng &rng, const T (&a)[N]) {
  return a[pick(rng, N)];
}

/// Integers that break size and index arithmetic, or near `current`.
int64_t interestingInt(Rng &rng, int64_t current) {
  static const int64_t values[] = {0,
                                   1,
                                   -1,
                                   2,
                                   3,
                                   4,
                                   7,
                                   8,
                                   16,
                                   32,
                                   64,
                                   127,
                                   128,
                                   255,
                                   256,
                                   1024,
                                   4096,
                                   65535,
                                   65536,
                                   int64_t(1) << 31,
                                   (int64_t(1) << 31) - 1,
                                   -(int64_t(1) << 31),
                                   int64_t(1) << 32,
                                   int64_t(1) << 40,
                                   int64_t(1) << 62,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min(),
                                   -2,
                                   -3};
  switch (pick(rng, 6)) {
  // Wrapping arithmetic: INT64_MAX + 1 is a fine value to try.
  case 0:
    return int64_t(uint64_t(current) + 1);
  case 1:
    return int64_t(uint64_t(current) - 1);
  case 2:
    return int64_t(0 - uint64_t(current));
  case 3:
    return int64_t(uint64_t(current) * 2);
  default:
    return pickOf(rng, values);
  }
}

float interestingFloat(Rng &rng, float current) {
  static const float values[] = {0.0f,
                                 -0.0f,
                                 1.0f,
                                 -1.0f,
                                 0.5f,
                                 2.0f,
                                 1e-6f,
                                 1e-30f,
                                 1e30f,
                                 std::numeric_limits<float>::max(),
                                 std::numeric_limits<float>::lowest(),
                                 std::numeric_limits<float>::denorm_min(),
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 10000.0f,
                                 65504.0f};
  switch (pick(rng, 5)) {
  case 0:
    return current * 2.0f;
  case 1:
    return -current;
  default:
    return pickOf(rng, values);
  }
}

std::string freshName(GraphProto &graph, const std::string &stem) {
  std::set<std::string> used;
  for (const NodeProto &n : graph.node())
    for (const std::string &o : n.output())
      used.insert(o);
  for (int i = 0;; ++i) {
    std::string name = stem + "_fz" + std::to_string(i);
    if (!used.count(name))
      return name;
  }
}

/// Values visible to node `index`: graph inputs, initializers and what
/// the nodes before it produce.
std::vector<std::string> valuesBefore(const GraphProto &graph, int index) {
  std::vector<std::string> names;
  for (const ValueInfoProto &v : graph.input())
    names.push_back(v.name());
  for (const TensorProto &t : graph.initializer())
    names.push_back(t.name());
  for (int i = 0; i < index && i < graph.node_size(); ++i)
    for (const std::string &o : graph.node(i).output())
      if (!o.empty())
        names.push_back(o);
  return names;
}

std::string pickValue(Rng &rng, const GraphProto &graph, int index) {
  std::vector<std::string> names =
      valuesBefore(graph, chance(rng, 16) ? graph.node_size() : index);
  if (names.empty() || chance(rng, 32))
    return chance(rng, 2) ? "" : "no_such_value";
  return names[pick(rng, names.size())];
}

/// The tensor's elements as little-endian bytes, whatever field holds
/// them; false when the type has no fixed size or the data is external.
bool tensorBytes(const TensorProto &t, std::string &bytes) {
  if (t.data_location() == TensorProto::EXTERNAL)
    return false;
  size_t size = elementSize(t.data_type());
  if (size == 0)
    return false;
  if (t.has_raw_data()) {
    bytes = t.raw_data();
    return true;
  }
  bytes.clear();
  auto append = [&](const void *p, size_t n) {
    bytes.append(static_cast<const char *>(p), n);
  };
  switch (t.data_type()) {
  case TensorProto::FLOAT:
    for (float f : t.float_data())
      append(&f, 4);
    return true;
  case TensorProto::INT64:
    for (int64_t v : t.int64_data())
      append(&v, 8);
    return true;
  case TensorProto::DOUBLE:
    for (double v : t.double_data())
      append(&v, 8);
    return true;
  case TensorProto::UINT64:
  case TensorProto::UINT32:
    for (uint64_t v : t.uint64_data())
      append(&v, size);
    return true;
  default:
    for (int32_t v : t.int32_data())
      append(&v, size);
    return true;
  }
}

void setTensorBytes(TensorProto &t, std::string bytes) {
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
  t.set_raw_data(std::move(bytes));
}

int64_t numElements(const TensorProto &t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

/// Resizes the data to the dims (when that stays small), repeating what
/// was there, so that a changed shape usually still loads.
void fitData(TensorProto &t) {
  std::string bytes;
  int64_t n = numElements(t);
  size_t size = elementSize(t.data_type());
  if (n < 0 || n > (int64_t(1) << 20) || !tensorBytes(t, bytes) || !size)
    return;
  std::string fitted(size_t(n) * size, '\0');
  for (size_t i = 0; !bytes.empty() && i < fitted.size(); ++i)
    fitted[i] = bytes[i % bytes.size()];
  setTensorBytes(t, std::move(fitted));
}

/// Overwrites one element with a value that breaks arithmetic (for an
/// integer tensor: a shape, an index, an axis; for a float one: NaN, inf).
void mutateElements(Rng &rng, TensorProto &t) {
  std::string bytes;
  size_t size = elementSize(t.data_type());
  if (!tensorBytes(t, bytes) || bytes.size() < size || size == 0)
    return;
  size_t count = bytes.size() / size;
  size_t at = pick(rng, count) * size;
  switch (t.data_type()) {
  case TensorProto::INT64: {
    int64_t v;
    std::memcpy(&v, &bytes[at], 8);
    v = interestingInt(rng, v);
    std::memcpy(&bytes[at], &v, 8);
    break;
  }
  case TensorProto::INT32: {
    int32_t v;
    std::memcpy(&v, &bytes[at], 4);
    v = int32_t(interestingInt(rng, v));
    std::memcpy(&bytes[at], &v, 4);
    break;
  }
  case TensorProto::FLOAT: {
    float v;
    std::memcpy(&v, &bytes[at], 4);
    v = interestingFloat(rng, v);
    // Sometimes the whole tensor: a NaN weight matrix, an all-zero scale.
    if (chance(rng, 4))
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4)
        std::memcpy(&bytes[i], &v, 4);
    else
      std::memcpy(&bytes[at], &v, 4);
    break;
  }
  default:
    for (size_t i = 0; i < size; ++i)
      bytes[at + i] = char(pick(rng, 256));
  }
  setTensorBytes(t, std::move(bytes));
}

void mutateTensor(Rng &rng, TensorProto &t) {
  switch (pick(rng, 6)) {
  case 0: // one dim
    if (t.dims_size()) {
      int i = int(pick(rng, t.dims_size()));
      t.set_dims(i, interestingInt(rng, t.dims(i)));
      if (!chance(rng, 4))
        fitData(t);
    }
    return;
  case 1: // rank
    if (t.dims_size() && chance(rng, 2)) {
      t.mutable_dims()->erase(t.mutable_dims()->begin() +
                              pick(rng, t.dims_size()));
    } else {
      t.add_dims(int64_t(pick(rng, 4)));
    }
    if (!chance(rng, 4))
      fitData(t);
    return;
  case 2: { // dtype
    std::string bytes;
    bool had = tensorBytes(t, bytes);
    t.set_data_type(pickOf(rng, kDataTypes));
    if (had)
      setTensorBytes(t, std::move(bytes));
    if (!chance(rng, 4))
      fitData(t);
    return;
  }
  case 3: { // truncated or padded data
    std::string bytes;
    if (tensorBytes(t, bytes)) {
      bytes.resize(pick(rng, bytes.size() + 9));
      setTensorBytes(t, std::move(bytes));
    }
    return;
  }
  default:
    mutateElements(rng, t);
  }
}

void mutateAttribute(Rng &rng, AttributeProto &a) {
  if (chance(rng, 10)) { // another kind than the handler expects
    a.set_type(pickOf(rng, kAttrs).type);
    if (a.type() == AttributeProto::TENSOR && !a.has_t())
      a.mutable_t()->set_data_type(TensorProto::INT64);
    return;
  }
  switch (a.type()) {
  case AttributeProto::INT:
    a.set_i(interestingInt(rng, a.i()));
    return;
  case AttributeProto::FLOAT:
    a.set_f(interestingFloat(rng, a.f()));
    return;
  case AttributeProto::STRING:
    a.set_s(pickOf(rng, kStrings));
    return;
  case AttributeProto::INTS:
    if (a.ints_size() && !chance(rng, 4)) {
      int i = int(pick(rng, a.ints_size()));
      a.set_ints(i, chance(rng, 2) ? interestingInt(rng, a.ints(i))
                                   : a.ints(int(pick(rng, a.ints_size()))));
    } else if (a.ints_size() && chance(rng, 2)) {
      a.mutable_ints()->RemoveLast();
    } else {
      a.add_ints(interestingInt(rng, a.ints_size()));
    }
    return;
  case AttributeProto::FLOATS:
    if (a.floats_size() && !chance(rng, 4)) {
      int i = int(pick(rng, a.floats_size()));
      a.set_floats(i, interestingFloat(rng, a.floats(i)));
    } else if (a.floats_size() && chance(rng, 2)) {
      a.mutable_floats()->RemoveLast();
    } else {
      a.add_floats(interestingFloat(rng, 1.0f));
    }
    return;
  case AttributeProto::TENSOR:
    mutateTensor(rng, *a.mutable_t());
    return;
  default:
    a.set_type(AttributeProto::INT);
    a.set_i(interestingInt(rng, 0));
  }
}

void fillAttribute(Rng &rng, AttributeProto &a, const AttrName &name) {
  a.set_name(name.name);
  a.set_type(name.type);
  switch (name.type) {
  case AttributeProto::INT:
    a.set_i(interestingInt(rng, int64_t(pick(rng, 3))));
    break;
  case AttributeProto::FLOAT:
    a.set_f(interestingFloat(rng, 1.0f));
    break;
  case AttributeProto::STRING:
    a.set_s(pickOf(rng, kStrings));
    break;
  case AttributeProto::INTS:
    for (uint64_t i = 0, n = pick(rng, 5); i < n; ++i)
      a.add_ints(chance(rng, 2) ? int64_t(pick(rng, 4)) - 1
                                : interestingInt(rng, 0));
    break;
  case AttributeProto::TENSOR: {
    TensorProto &t = *a.mutable_t();
    t.set_data_type(chance(rng, 2) ? TensorProto::INT64 : TensorProto::FLOAT);
    for (uint64_t i = 0, n = pick(rng, 3); i < n; ++i)
      t.add_dims(int64_t(pick(rng, 4)));
    std::string bytes(8, '\0');
    bytes[0] = 1;
    t.set_raw_data(bytes);
    fitData(t);
    break;
  }
  default:
    break;
  }
}

void setOp(Rng &rng, NodeProto &node) {
  const OpName &op = pickOf(rng, kOps);
  node.set_op_type(op.type);
  node.set_domain(op.domain);
}

/// A dim: fixed (small, zero, huge), symbolic (a name the model already
/// uses, or a new one) or unknown.
void mutateDim(Rng &rng, TensorShapeProto::Dimension &d) {
  static const char *symbols[] = {"batch", "seq",  "past", "sequence_length",
                                  "total", "d_fz", "",     "batch_size"};
  switch (pick(rng, 4)) {
  case 0:
    d.set_dim_param(pickOf(rng, symbols));
    return;
  case 1:
    d.Clear();
    return;
  default:
    d.set_dim_value(interestingInt(rng, d.has_dim_value() ? d.dim_value() : 1));
  }
}

bool mutateValueInfo(Rng &rng, ValueInfoProto &v) {
  TypeProto::Tensor &t = *v.mutable_type()->mutable_tensor_type();
  if (chance(rng, 8)) {
    t.set_elem_type(pickOf(rng, kDataTypes));
    return true;
  }
  TensorShapeProto &shape = *t.mutable_shape();
  switch (pick(rng, 8)) {
  case 0:
    if (shape.dim_size())
      shape.mutable_dim()->erase(shape.mutable_dim()->begin() +
                                 pick(rng, shape.dim_size()));
    return true;
  case 1:
    mutateDim(rng, *shape.add_dim());
    return true;
  case 2:
    t.clear_shape();
    return true;
  default:
    if (!shape.dim_size())
      return false;
    mutateDim(rng, *shape.mutable_dim(int(pick(rng, shape.dim_size()))));
    return true;
  }
}

// --- The mutations ----------------------------------------------------------
// Each returns false when it does not apply to the model (no node, ...).

bool changeOpType(Rng &rng, GraphProto &g) {
  if (!g.node_size())
    return false;
  setOp(rng, *g.mutable_node(int(pick(rng, g.node_size()))));
  return true;
}

bool addNode(Rng &rng, GraphProto &g) {
  int at = int(pick(rng, g.node_size() + 1));
  NodeProto node;
  setOp(rng, node);
  node.set_name(freshName(g, "node"));
  for (uint64_t i = 0, n = 1 + pick(rng, 3); i < n; ++i)
    *node.add_input() = pickValue(rng, g, at);
  std::string out = freshName(g, node.op_type());
  node.add_output(out);
  for (uint64_t i = 0, n = pick(rng, 3); i < n; ++i)
    fillAttribute(rng, *node.add_attribute(), pickOf(rng, kAttrs));
  auto *nodes = g.mutable_node();
  nodes->Add(std::move(node));
  std::rotate(nodes->begin() + at, nodes->end() - 1, nodes->end());
  // Usually make a later node read it, so that it is not dead code.
  if (at + 1 < g.node_size() && !chance(rng, 4)) {
    NodeProto &user =
        *g.mutable_node(int(at + 1 + pick(rng, g.node_size() - at - 1)));
    if (user.input_size())
      user.set_input(int(pick(rng, user.input_size())), out);
  }
  return true;
}

bool removeNode(Rng &rng, GraphProto &g) {
  if (!g.node_size())
    return false;
  int at = int(pick(rng, g.node_size()));
  NodeProto removed = g.node(at);
  g.mutable_node()->erase(g.mutable_node()->begin() + at);
  // Usually route its readers to its first input (bypassing it).
  if (removed.input_size() && !chance(rng, 4))
    for (NodeProto &n : *g.mutable_node())
      for (int i = 0; i < n.input_size(); ++i)
        for (const std::string &o : removed.output())
          if (n.input(i) == o)
            n.set_input(i, removed.input(0));
  return true;
}

bool duplicateNode(Rng &rng, GraphProto &g) {
  if (!g.node_size())
    return false;
  int at = int(pick(rng, g.node_size()));
  NodeProto copy = g.node(at);
  std::vector<std::pair<std::string, std::string>> renamed;
  for (int i = 0; i < copy.output_size(); ++i) {
    std::string fresh = freshName(g, copy.output(i));
    renamed.emplace_back(copy.output(i), fresh);
    copy.set_output(i, fresh);
  }
  copy.set_name(copy.name() + "_dup");
  auto *nodes = g.mutable_node();
  nodes->Add(std::move(copy));
  std::rotate(nodes->begin() + at + 1, nodes->end() - 1, nodes->end());
  // Half the time a later reader takes the copy's output instead.
  if (chance(rng, 2))
    for (int j = at + 2; j < g.node_size(); ++j) {
      NodeProto &n = *g.mutable_node(j);
      for (int i = 0; i < n.input_size(); ++i)
        for (const auto &[from, to] : renamed)
          if (n.input(i) == from && chance(rng, 2)) {
            n.set_input(i, to);
            return true;
          }
    }
  return true;
}

bool rewireInput(Rng &rng, GraphProto &g) {
  if (!g.node_size())
    return false;
  int at = int(pick(rng, g.node_size()));
  NodeProto &n = *g.mutable_node(at);
  switch (pick(rng, 8)) {
  case 0:
    *n.add_input() = pickValue(rng, g, at);
    return true;
  case 1:
    if (!n.input_size())
      return false;
    n.mutable_input()->RemoveLast();
    return true;
  case 2:
    if (!n.input_size())
      return false;
    n.set_input(int(pick(rng, n.input_size())), "");
    return true;
  default:
    if (!n.input_size())
      return false;
    n.set_input(int(pick(rng, n.input_size())), pickValue(rng, g, at));
    return true;
  }
}

bool changeAttribute(Rng &rng, GraphProto &g) {
  if (!g.node_size())
    return false;
  NodeProto &n = *g.mutable_node(int(pick(rng, g.node_size())));
  if (!n.attribute_size() || chance(rng, 5)) {
    fillAttribute(rng, *n.add_attribute(), pickOf(rng, kAttrs));
    return true;
  }
  int i = int(pick(rng, n.attribute_size()));
  if (chance(rng, 8)) {
    n.mutable_attribute()->erase(n.mutable_attribute()->begin() + i);
    return true;
  }
  mutateAttribute(rng, *n.mutable_attribute(i));
  return true;
}

bool changeInitializer(Rng &rng, GraphProto &g) {
  if (!g.initializer_size())
    return false;
  // Prefer the small ones (shapes, axes, scalars): they steer the
  // compiler's shape arithmetic.
  int best = int(pick(rng, g.initializer_size()));
  for (int tries = 0; tries < 3; ++tries) {
    int other = int(pick(rng, g.initializer_size()));
    if (numElements(g.initializer(other)) < numElements(g.initializer(best)))
      best = other;
  }
  mutateTensor(rng, *g.mutable_initializer(best));
  return true;
}

bool changeGraphValueShape(Rng &rng, GraphProto &g) {
  switch (pick(rng, 4)) {
  case 0:
  case 1:
    if (!g.input_size())
      return false;
    return mutateValueInfo(rng,
                           *g.mutable_input(int(pick(rng, g.input_size()))));
  case 2:
    if (!g.output_size())
      return false;
    return mutateValueInfo(rng,
                           *g.mutable_output(int(pick(rng, g.output_size()))));
  default:
    if (!g.value_info_size())
      return false;
    return mutateValueInfo(
        rng, *g.mutable_value_info(int(pick(rng, g.value_info_size()))));
  }
}

bool changeOpsets(Rng &rng, ModelProto &m) {
  static const int64_t versions[] = {1,  11, 12, 13, 14, 15, 16, 17,
                                     18, 19, 20, 21, 22, 23, 24, 1000};
  switch (pick(rng, 4)) {
  case 0:
    m.set_ir_version(chance(rng, 2) ? int64_t(pick(rng, 12))
                                    : interestingInt(rng, m.ir_version()));
    return true;
  case 1: {
    // Add or drop com.microsoft.
    for (int i = 0; i < m.opset_import_size(); ++i)
      if (m.opset_import(i).domain() == "com.microsoft") {
        m.mutable_opset_import()->erase(m.mutable_opset_import()->begin() + i);
        return true;
      }
    OperatorSetIdProto &ms = *m.add_opset_import();
    ms.set_domain("com.microsoft");
    ms.set_version(1);
    return true;
  }
  default:
    if (!m.opset_import_size())
      return false;
    m.mutable_opset_import(int(pick(rng, m.opset_import_size())))
        ->set_version(pickOf(rng, versions));
    return true;
  }
}

bool changeOutputs(Rng &rng, GraphProto &g) {
  switch (pick(rng, 3)) {
  case 0:
    if (!g.output_size())
      return false;
    g.mutable_output(int(pick(rng, g.output_size())))
        ->set_name(pickValue(rng, g, g.node_size()));
    return true;
  case 1:
    if (g.output_size() < 2)
      return false;
    g.mutable_output()->erase(g.mutable_output()->begin() +
                              pick(rng, g.output_size()));
    return true;
  default: {
    ValueInfoProto &v = *g.add_output();
    v.set_name(pickValue(rng, g, g.node_size()));
    v.mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
    return true;
  }
  }
}

bool swapNodes(Rng &rng, GraphProto &g) {
  if (g.node_size() < 2)
    return false;
  int a = int(pick(rng, g.node_size() - 1));
  g.mutable_node()->SwapElements(a, a + 1);
  return true;
}

} // namespace

const char *mutateGraph(ModelProto &model, Rng &rng) {
  GraphProto &g = *model.mutable_graph();
  // Weighted toward what reaches deep into the compiler: attributes,
  // small initializers and wiring.
  struct Mutation {
    const char *name;
    unsigned weight;
    bool (*apply)(Rng &, ModelProto &);
  };
  static const Mutation mutations[] = {
      {"op-type", 3,
       [](Rng &r, ModelProto &m) {
         return changeOpType(r, *m.mutable_graph());
       }},
      {"add-node", 3,
       [](Rng &r, ModelProto &m) { return addNode(r, *m.mutable_graph()); }},
      {"remove-node", 2,
       [](Rng &r, ModelProto &m) { return removeNode(r, *m.mutable_graph()); }},
      {"duplicate-node", 2,
       [](Rng &r, ModelProto &m) {
         return duplicateNode(r, *m.mutable_graph());
       }},
      {"rewire-input", 4,
       [](Rng &r, ModelProto &m) {
         return rewireInput(r, *m.mutable_graph());
       }},
      {"attribute", 5,
       [](Rng &r, ModelProto &m) {
         return changeAttribute(r, *m.mutable_graph());
       }},
      {"initializer", 5,
       [](Rng &r, ModelProto &m) {
         return changeInitializer(r, *m.mutable_graph());
       }},
      {"graph-value-shape", 3,
       [](Rng &r, ModelProto &m) {
         return changeGraphValueShape(r, *m.mutable_graph());
       }},
      {"opset", 1, changeOpsets},
      {"outputs", 1,
       [](Rng &r, ModelProto &m) {
         return changeOutputs(r, *m.mutable_graph());
       }},
      {"swap-nodes", 1,
       [](Rng &r, ModelProto &m) { return swapNodes(r, *m.mutable_graph()); }},
  };
  unsigned total = 0;
  for (const Mutation &m : mutations)
    total += m.weight;
  for (int attempt = 0; attempt < 16; ++attempt) {
    uint64_t ticket = pick(rng, total);
    for (const Mutation &m : mutations) {
      if (ticket >= m.weight) {
        ticket -= m.weight;
        continue;
      }
      if (m.apply(rng, model))
        return m.name;
      break;
    }
  }
  // An empty graph: give it a node to grow from.
  addNode(rng, g);
  return "add-node";
}

void crossOverGraphs(ModelProto &model, const ModelProto &other, Rng &rng) {
  GraphProto &g = *model.mutable_graph();
  const GraphProto &from = other.graph();
  if (!from.node_size())
    return;
  int first = int(pick(rng, from.node_size()));
  int count = int(1 + pick(rng, std::min(4, from.node_size() - first)));
  int at = int(pick(rng, g.node_size() + 1));
  std::vector<std::pair<std::string, std::string>> renamed;
  std::vector<NodeProto> run;
  for (int i = first; i < first + count; ++i) {
    NodeProto n = from.node(i);
    for (int j = 0; j < n.input_size(); ++j) {
      bool mapped = false;
      for (const auto &[old, fresh] : renamed)
        if (n.input(j) == old) {
          n.set_input(j, fresh);
          mapped = true;
        }
      if (mapped || n.input(j).empty())
        continue;
      // An initializer of the other model comes along when small.
      for (const TensorProto &t : from.initializer())
        if (t.name() == n.input(j) && t.ByteSizeLong() < 4096) {
          bool present = false;
          for (const TensorProto &mine : g.initializer())
            present = present || mine.name() == t.name();
          if (!present)
            *g.add_initializer() = t;
          mapped = true;
        }
      if (!mapped && !chance(rng, 4))
        n.set_input(j, pickValue(rng, g, at));
    }
    for (int j = 0; j < n.output_size(); ++j) {
      std::string fresh = freshName(g, n.output(j));
      renamed.emplace_back(n.output(j), fresh);
      n.set_output(j, fresh);
    }
    run.push_back(std::move(n));
  }
  auto *nodes = g.mutable_node();
  for (NodeProto &n : run)
    nodes->Add(std::move(n));
  std::rotate(nodes->begin() + at, nodes->end() - count, nodes->end());
  // A later node reads the run's last output.
  if (!renamed.empty() && at + count < g.node_size()) {
    NodeProto &user = *g.mutable_node(
        int(at + count + pick(rng, g.node_size() - at - count)));
    if (user.input_size())
      user.set_input(int(pick(rng, user.input_size())), renamed.back().second);
  }
}

} // namespace folio::fuzz
