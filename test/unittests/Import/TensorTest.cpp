//===- TensorTest.cpp - Initializer storage forms and their checks --------===//

#include "test/unittests/Import/LoaderTestUtil.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstring>

using namespace folio::onnx;
using namespace folio::onnx::testing;
using ::testing::HasSubstr;

namespace {

/// A model whose graph just returns initializer `tensor` through Identity.
ModelProto modelWith(TensorProto tensor) {
  ModelProto proto = makeModel();
  GraphProto &graph = *proto.mutable_graph();
  std::string name = tensor.name();
  addInitializer(graph, std::move(tensor));
  addNode(graph, "Identity", {name}, {"out"});
  ValueInfoProto *out = graph.add_output();
  out->set_name("out");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  return proto;
}

/// Loads `tensor` as an initializer and returns a copy of it (TensorData
/// shares ownership of its bytes, so the copy outlives the model).
std::optional<TensorData> loadTensor(TensorProto tensor) {
  TempDir dir;
  std::string name = tensor.name();
  std::unique_ptr<Model> model = loadOrFail(modelWith(std::move(tensor)), dir);
  if (!model)
    return std::nullopt;
  const TensorData *found = model->getGraph().findInitializer(name);
  if (!found) {
    ADD_FAILURE() << "no initializer " << name;
    return std::nullopt;
  }
  return *found;
}

std::string bytesOf(const TensorData &tensor) {
  return std::string(reinterpret_cast<const char *>(tensor.getBytes().data()),
                     tensor.getBytes().size());
}

TEST(TensorTest, RawDataIsMovedNotCopied) {
  std::string bytes = toBytes<float>({1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f});
  std::optional<TensorData> tensor =
      loadTensor(makeRawTensor("w", TensorProto::FLOAT, {2, 3}, bytes));
  ASSERT_TRUE(tensor);
  EXPECT_EQ(tensor->getName(), "w");
  EXPECT_EQ(tensor->getElementType(), ElementType::Float);
  EXPECT_EQ(tensor->getDims(), llvm::ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(tensor->getRank(), 2u);
  EXPECT_EQ(tensor->getNumElements(), 6);
  EXPECT_EQ(tensor->getStorage(), TensorStorage::Inline);
  EXPECT_FALSE(tensor->getExternalLocation().has_value());
  EXPECT_EQ(bytesOf(*tensor), bytes);
}

TEST(TensorTest, FloatDataIsPacked) {
  std::optional<TensorData> tensor =
      loadTensor(makeFloatTensor("f", {3}, {1.0f, -0.5f, 1e30f}));
  ASSERT_TRUE(tensor);
  EXPECT_EQ(tensor->getStorage(), TensorStorage::Converted);
  EXPECT_EQ(bytesOf(*tensor), toBytes<float>({1.0f, -0.5f, 1e30f}));
}

/// A tensor of `type` whose values sit in int32_data.
TensorProto int32Tensor(int32_t type, std::vector<int32_t> values) {
  TensorProto tensor;
  tensor.set_name("t");
  tensor.set_data_type(type);
  tensor.add_dims(values.size());
  for (int32_t value : values)
    tensor.add_int32_data(value);
  return tensor;
}

TEST(TensorTest, Int32DataHoldsNarrowTypesAsTheirLowBits) {
  // float16 1.0 = 0x3c00, -2.0 = 0xc000: int32_data holds the bit patterns.
  std::optional<TensorData> f16 =
      loadTensor(int32Tensor(TensorProto::FLOAT16, {0x3c00, 0xc000}));
  ASSERT_TRUE(f16);
  EXPECT_EQ(f16->getElementType(), ElementType::Float16);
  EXPECT_EQ(bytesOf(*f16), toBytes<uint16_t>({0x3c00, 0xc000}));

  // bfloat16 1.0 = 0x3f80.
  std::optional<TensorData> bf16 =
      loadTensor(int32Tensor(TensorProto::BFLOAT16, {0x3f80}));
  ASSERT_TRUE(bf16);
  EXPECT_EQ(bytesOf(*bf16), toBytes<uint16_t>({0x3f80}));

  std::optional<TensorData> i8 =
      loadTensor(int32Tensor(TensorProto::INT8, {-5, 127, -128}));
  ASSERT_TRUE(i8);
  EXPECT_EQ(bytesOf(*i8), toBytes<int8_t>({-5, 127, -128}));

  std::optional<TensorData> u8 =
      loadTensor(int32Tensor(TensorProto::UINT8, {200, 0}));
  ASSERT_TRUE(u8);
  EXPECT_EQ(bytesOf(*u8), toBytes<uint8_t>({200, 0}));

  std::optional<TensorData> i16 =
      loadTensor(int32Tensor(TensorProto::INT16, {-300}));
  ASSERT_TRUE(i16);
  EXPECT_EQ(bytesOf(*i16), toBytes<int16_t>({-300}));

  std::optional<TensorData> i32 =
      loadTensor(int32Tensor(TensorProto::INT32, {-70000, 5}));
  ASSERT_TRUE(i32);
  EXPECT_EQ(bytesOf(*i32), toBytes<int32_t>({-70000, 5}));

  // Any non-zero value is true; stored as 1.
  std::optional<TensorData> b =
      loadTensor(int32Tensor(TensorProto::BOOL, {0, 1, 7}));
  ASSERT_TRUE(b);
  EXPECT_EQ(bytesOf(*b), toBytes<uint8_t>({0, 1, 1}));

  std::optional<TensorData> f8 =
      loadTensor(int32Tensor(TensorProto::FLOAT8E4M3FN, {0x38, 0x7e}));
  ASSERT_TRUE(f8);
  EXPECT_EQ(f8->getElementType(), ElementType::Float8E4M3FN);
  EXPECT_EQ(bytesOf(*f8), toBytes<uint8_t>({0x38, 0x7e}));
}

TEST(TensorTest, Int64DoubleAndUint64DataArePacked) {
  TensorProto i64;
  i64.set_name("i64");
  i64.set_data_type(TensorProto::INT64);
  i64.add_dims(2);
  i64.add_int64_data(-1);
  i64.add_int64_data(int64_t(1) << 40);
  std::optional<TensorData> a = loadTensor(i64);
  ASSERT_TRUE(a);
  EXPECT_EQ(bytesOf(*a), toBytes<int64_t>({-1, int64_t(1) << 40}));

  TensorProto f64;
  f64.set_name("f64");
  f64.set_data_type(TensorProto::DOUBLE);
  f64.add_double_data(0.1);
  std::optional<TensorData> b = loadTensor(f64);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->getRank(), 0u);
  EXPECT_EQ(b->getNumElements(), 1);
  EXPECT_EQ(bytesOf(*b), toBytes<double>({0.1}));

  TensorProto u32;
  u32.set_name("u32");
  u32.set_data_type(TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  std::optional<TensorData> c = loadTensor(u32);
  ASSERT_TRUE(c);
  EXPECT_EQ(bytesOf(*c), toBytes<uint32_t>({4000000000u}));

  TensorProto u64;
  u64.set_name("u64");
  u64.set_data_type(TensorProto::UINT64);
  u64.add_dims(1);
  u64.add_uint64_data(~uint64_t(0));
  std::optional<TensorData> d = loadTensor(u64);
  ASSERT_TRUE(d);
  EXPECT_EQ(bytesOf(*d), toBytes<uint64_t>({~uint64_t(0)}));
}

TEST(TensorTest, EmptyTensorNeedsNoData) {
  TensorProto empty;
  empty.set_name("e");
  empty.set_data_type(TensorProto::FLOAT);
  empty.add_dims(0);
  empty.add_dims(5);
  std::optional<TensorData> tensor = loadTensor(empty);
  ASSERT_TRUE(tensor);
  EXPECT_EQ(tensor->getNumElements(), 0);
  EXPECT_TRUE(tensor->getBytes().empty());
}

TEST(TensorTest, ReadIntegersWidensEveryIntegerType) {
  std::optional<TensorData> shape = loadTensor(makeRawTensor(
      "shape", TensorProto::INT64, {3}, toBytes<int64_t>({0, -1, 64})));
  ASSERT_TRUE(shape);
  llvm::Expected<std::vector<int64_t>> values = shape->readIntegers();
  ASSERT_TRUE(bool(values));
  EXPECT_EQ(*values, (std::vector<int64_t>{0, -1, 64}));

  std::optional<TensorData> axes = loadTensor(makeRawTensor(
      "axes", TensorProto::INT32, {2}, toBytes<int32_t>({-1, 2})));
  ASSERT_TRUE(axes);
  values = axes->readIntegers();
  ASSERT_TRUE(bool(values));
  EXPECT_EQ(*values, (std::vector<int64_t>{-1, 2}));

  std::optional<TensorData> u8 = loadTensor(
      makeRawTensor("u8", TensorProto::UINT8, {2}, toBytes<uint8_t>({255, 1})));
  ASSERT_TRUE(u8);
  values = u8->readIntegers();
  ASSERT_TRUE(bool(values));
  EXPECT_EQ(*values, (std::vector<int64_t>{255, 1}));

  std::optional<TensorData> big = loadTensor(makeRawTensor(
      "big", TensorProto::UINT64, {1}, toBytes<uint64_t>({~uint64_t(0)})));
  ASSERT_TRUE(big);
  EXPECT_THAT(errorOf(big->readIntegers()),
              HasSubstr("uint64 element 0 does not fit in int64"));

  std::optional<TensorData> floats =
      loadTensor(makeFloatTensor("f", {1}, {1.0f}));
  ASSERT_TRUE(floats);
  EXPECT_THAT(errorOf(floats->readIntegers()),
              HasSubstr("tensor 'f' has element type float, expected an "
                        "integer or bool type"));
}

TEST(TensorTest, RawDataSizeMustMatchDims) {
  std::string message = loadError(modelWith(
      makeRawTensor("w", TensorProto::FLOAT, {2, 3}, std::string(20, '\0'))));
  EXPECT_THAT(message, HasSubstr("initializer 'w': raw_data holds 20 bytes, "
                                 "but dims [2, 3] of float need 24"));
  EXPECT_THAT(message, HasSubstr("model.onnx"));
}

TEST(TensorTest, FourBitIntegersAreUnpackedToAByteEach) {
  // Five elements in three bytes, the even element in the low nibble: int4
  // -8, 7, -1, 0, 3 and the same nibbles as uint4 8, 7, 15, 0, 3.
  std::string packed = {'\x78', '\x0f', '\x03'};
  std::optional<TensorData> s =
      loadTensor(makeRawTensor("s", TensorProto::INT4, {5}, packed));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->getElementType(), ElementType::Int4);
  EXPECT_EQ(s->getStorage(), TensorStorage::Converted);
  EXPECT_EQ(bytesOf(*s), std::string({'\xf8', '\x07', '\xff', '\x00', '\x03'}));
  std::optional<TensorData> u =
      loadTensor(makeRawTensor("u", TensorProto::UINT4, {5}, packed));
  ASSERT_TRUE(u);
  EXPECT_EQ(bytesOf(*u), std::string({'\x08', '\x07', '\x0f', '\x00', '\x03'}));
}

TEST(TensorTest, FourBitIntegersNeedHalfAByteEach) {
  EXPECT_THAT(loadError(modelWith(makeRawTensor("w", TensorProto::INT4, {2, 3},
                                                std::string(6, '\0')))),
              HasSubstr("initializer 'w': raw_data holds 6 bytes, but dims "
                        "[2, 3] of int4 need 3 (two elements per byte)"));
  TensorProto typed = makeRawTensor("t", TensorProto::UINT4, {2}, "");
  typed.clear_raw_data();
  typed.add_int32_data(1);
  EXPECT_THAT(loadError(modelWith(typed)),
              HasSubstr("initializer 't': uint4 stored in int32_data is not "
                        "supported; store it in raw_data or as external "
                        "data"));
}

TEST(TensorTest, TypedFieldCountMustMatchDims) {
  EXPECT_THAT(loadError(modelWith(makeFloatTensor("w", {4}, {1, 2, 3}))),
              HasSubstr("initializer 'w': float_data holds 3 values, but "
                        "dims [4] need 4"));
}

TEST(TensorTest, NegativeDimsAreRefused) {
  EXPECT_THAT(
      loadError(modelWith(makeRawTensor("w", TensorProto::FLOAT, {2, -3}, ""))),
      HasSubstr("initializer 'w': has negative dimension -3 at index "
                "1 of dims [2, -3]"));
}

TEST(TensorTest, OverflowingDimsAreRefused) {
  EXPECT_THAT(
      loadError(modelWith(makeRawTensor(
          "w", TensorProto::FLOAT, {int64_t(1) << 40, int64_t(1) << 40}, ""))),
      HasSubstr("initializer 'w': dims [1099511627776, 1099511627776] of "
                "float exceed"));
}

TEST(TensorTest, MissingDataIsRefused) {
  TensorProto tensor;
  tensor.set_name("w");
  tensor.set_data_type(TensorProto::INT64);
  tensor.add_dims(3);
  EXPECT_THAT(loadError(modelWith(tensor)),
              HasSubstr("initializer 'w': has no data (no raw_data, "
                        "int64_data or external data) for its 3 elements"));
}

TEST(TensorTest, WrongTypedFieldIsRefused) {
  TensorProto tensor = int32Tensor(TensorProto::FLOAT, {1});
  EXPECT_THAT(loadError(modelWith(tensor)),
              HasSubstr("stores float values in int32_data; ONNX keeps them "
                        "in float_data or raw_data"));
}

TEST(TensorTest, TwoDataFieldsAreRefused) {
  TensorProto both = makeFloatTensor("w", {1}, {1.0f});
  both.set_raw_data(toBytes<float>({1.0f}));
  EXPECT_THAT(loadError(modelWith(both)),
              HasSubstr("has both raw_data and float_data"));

  TensorProto twoTyped = makeFloatTensor("w", {1}, {1.0f});
  twoTyped.add_int64_data(1);
  EXPECT_THAT(loadError(modelWith(twoTyped)),
              HasSubstr("has both float_data and int64_data"));
}

TEST(TensorTest, UnsupportedAndUnknownTypesAreRefused) {
  TensorProto text;
  text.set_name("s");
  text.set_data_type(TensorProto::STRING);
  text.add_string_data("hi");
  std::string message = loadError(modelWith(text));
  EXPECT_THAT(message, HasSubstr("initializer 's': has element type string, "
                                 "which is not supported; supported: "));
  EXPECT_THAT(message, HasSubstr("bfloat16"));

  TensorProto fp4 = makeRawTensor("q", TensorProto::FLOAT4E2M1, {2}, "\x12");
  EXPECT_THAT(loadError(modelWith(fp4)),
              HasSubstr("has element type float4e2m1, which is not supported"));

  TensorProto unknown = makeRawTensor("u", 99, {1}, "x");
  EXPECT_THAT(loadError(modelWith(unknown)),
              HasSubstr("initializer 'u': has unknown data_type 99"));

  TensorProto untyped = makeRawTensor("n", 0, {1}, "x");
  EXPECT_THAT(loadError(modelWith(untyped)),
              HasSubstr("initializer 'n': has no data_type"));
}

TEST(TensorTest, SegmentedTensorsAreRefused) {
  TensorProto tensor = makeFloatTensor("w", {1}, {1.0f});
  tensor.mutable_segment()->set_begin(0);
  EXPECT_THAT(loadError(modelWith(tensor)),
              HasSubstr("initializer 'w': is segmented"));
}

TEST(TensorTest, UnnamedInitializerIsRefused) {
  EXPECT_THAT(loadError(modelWith(makeFloatTensor("", {1}, {1.0f}))),
              HasSubstr("initializer #0 has no name"));
}

} // namespace
