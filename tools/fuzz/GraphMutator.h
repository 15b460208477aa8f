//===- GraphMutator.h - Graph-level mutations of ONNX models ----*- C++ -*-===//
//
// The structure-aware half of the ONNX graph fuzzer: mutations that keep a
// model a parseable ModelProto and mostly a well-formed graph, so that the
// compiler sees plausible models that are wrong in one way (an op type, a
// wire, an attribute, a dim, an initializer, an opset) instead of bytes the
// protobuf parser refuses.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FUZZ_GRAPHMUTATOR_H
#define FOLIO_TOOLS_FUZZ_GRAPHMUTATOR_H

#include "compiler/Import/ONNX/folio_onnx.pb.h"

#include <random>

namespace folio::fuzz {

/// Applies one random graph-level mutation to `model` and returns its name
/// (for FOLIO_FUZZ_VERBOSE). Mutations: change a node's op type among the
/// ops Folio handles, add, remove or duplicate a node, rewire an input,
/// change, add or drop an attribute, change an initializer's dims, dtype or
/// values, change a graph input's dims (fixed, symbolic, huge, dropped),
/// change the opsets or the IR version, change the graph outputs, reorder
/// two nodes.
const char *mutateGraph(folio_onnx::ModelProto &model, std::mt19937_64 &rng);

/// Copies a short run of nodes from `other` into `model` (with the
/// initializers they read), renaming what they produce and wiring what
/// they read to values of `model`.
void crossOverGraphs(folio_onnx::ModelProto &model,
                     const folio_onnx::ModelProto &other, std::mt19937_64 &rng);

} // namespace folio::fuzz

#endif // FOLIO_TOOLS_FUZZ_GRAPHMUTATOR_H
