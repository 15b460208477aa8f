#!/usr/bin/env python3
"""Derive already-quantized fixtures of the Hugging Face zoo from its committed fp32 fixtures, with
ONNX Runtime's own quantizers where they write the form, and write their ONNX Runtime references
and manifest entries exactly as build.py does.

    .venv/bin/python models/zoo-hf/quantize.py                      # every quantized form
    .venv/bin/python models/zoo-hf/quantize.py --forms qdq_int8     # some forms
    .venv/bin/python models/zoo-hf/quantize.py --only llama         # some architectures

Forms (source: the architecture's `genai` fixture, ONNX Runtime GenAI's fp32 model builder export):
  genai_int4       com.microsoft MatMulNBits, 4 bits, block 32, symmetric (no zero_points input:
                   the implied zero point is 8), accuracy_level unset (float compute), as
                   `onnxruntime.quantization.matmul_nbits_quantizer` writes it (and the model
                   builder's -p int4 / Olive)
  genai_int4_asym  as genai_int4, asymmetric (packed uint8 zero_points input), block 64
  genai_int4_gather       as genai_int4, and the embedding's Gather replaced by com.microsoft
                          GatherBlockQuantized (int4 table, blocks of 32 along the hidden axis,
                          symmetric), the same quantizer with op_types_to_quantize MatMul and Gather
  genai_int4_gather_asym  as genai_int4_gather, asymmetric (uint4 codes and zero points), block 16
  qdq_int4         DequantizeLinear (opset 21) of int4 weights [K, N] blocked along K (axis 0,
                   block_size 32, symmetric: no zero point) feeding MatMul, written by the same
                   quantizer with quant_format=QDQ
  qdq_uint4        as qdq_int4, asymmetric: uint4 weights with uint4 zero points
  qdq_int8         DequantizeLinear of int8 weights [K, N] per output channel (axis 1, scale
                   max|w| / 127 per column, zero point 0) feeding MatMul: ONNX Runtime has no
                   weight-only per-channel int8 QDQ tool (its quantizer refuses 8-bit QDQ MatMul),
                   so this one is a numpy rewrite (round half to even, clip to [-127, 127])
  qdq_static       static quantization (activations too), as `onnxruntime.quantization.
                   quantize_static` writes it with quant_format=QDQ, op_types_to_quantize=[MatMul],
                   per_channel: each MatMul's activation input x -> QuantizeLinear(scale f32,
                   zero point uint8, per tensor, asymmetric; MinMax calibration on the prefill of
                   the reference prompts) -> DequantizeLinear -> MatMul (one pair per tensor,
                   shared by the MatMuls reading it), weights as qdq_int8 (int8 symmetric per
                   output channel, axis 1); MatMul outputs, GroupQueryAttention and the norms stay
                   float; references with graph optimizations off (below)
Every MatMul with a constant 2-D weight is quantized, lm_head included (the manifest's `ops` show
it); Gather of the embedding keeps its float table except in the *_gather forms (tied models keep
the fp32 lm_head weight for
their Transpose -> Gather), except in qdq_static, where quantize_static replaces the tied weight
everywhere: Qwen2's embedding is gathered from Transpose(DequantizeLinear(int8 lm_head)).

The references follow build.py's conventions (models/zoo/refdriver.py protocol, genai dim_values,
batch2 left out for GroupQueryAttention graphs, single-threaded ONNX Runtime, fixed zip
timestamps). Each quantized graph is also run with its weights dequantized in numpy back into a
plain MatMul, and each activation QuantizeLinear -> DequantizeLinear pair rewritten into the
float ops of its ONNX definition (Div, Round, Add, Clip, Sub, Mul), as `ort_vs_dequantized`:
ONNX Runtime's quantized kernels against float compute on the same weights. The qdq_static
references run with graph optimizations off (`reference_graph_optimization_level`), so that
QuantizeLinear and DequantizeLinear run as the separate ops the graph names instead of fused
integer kernels (`ort_fused_vs_reference` in the manifest says how far those are). Each graph's
tokens are compared with the fp32 source's (`ort_vs_fp32`; random tiny models have small top-2
margins, so some greedy steps may flip). Re-run after build.py rebuilds a `genai` fixture.

Needs onnx, onnxruntime, onnx-ir and numpy of models/zoo-hf/requirements.txt (no torch).
Deterministic: the quantizers are deterministic (quantize_static calibrates in a session of its
own with ONNX Runtime's default threads; its per-element kernels give the same ranges run after
run), the references' ONNX Runtime is single-threaded, the zip timestamps are fixed.
"""
import argparse
import json
import logging
import os
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "zoo"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnxruntime.quantization import (  # noqa: E402
    CalibrationDataReader, CalibrationMethod, QuantType, quantize_static)
from onnxruntime.quantization.matmul_nbits_quantizer import (  # noqa: E402
    DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer)
from onnxruntime.quantization.quant_utils import QuantFormat  # noqa: E402

import refdriver as rd  # noqa: E402
from fixture_io import (cases_summary, graph_io, load_refs, max_diff, op_summary,  # noqa: E402
                        save_refs, sha256)

# name: (source form, architectures, how, settings). how: "nbits" = MatMulNBitsQuantizer with
# DefaultWeightOnlyQuantConfig(**settings); "int8_per_channel" = numpy rewrite below; "static" =
# quantize_static(**settings) (enum members by name) calibrated on the reference prompts.
QFORMS = {
    "genai_int4": ("genai", ["llama", "qwen2", "phi3"], "nbits",
                   dict(bits=4, block_size=32, is_symmetric=True, accuracy_level=None,
                        quant_format="QOperator")),
    "genai_int4_asym": ("genai", ["llama", "qwen2"], "nbits",
                        dict(bits=4, block_size=64, is_symmetric=False, accuracy_level=None,
                             quant_format="QOperator")),
    "genai_int4_gather": ("genai", ["llama"], "nbits",
                          dict(bits=4, block_size=32, is_symmetric=True, accuracy_level=None,
                               quant_format="QOperator", op_types_to_quantize=("MatMul", "Gather"),
                               quant_axes=(("MatMul", 0), ("Gather", 1)))),
    "genai_int4_gather_asym": ("genai", ["llama"], "nbits",
                               dict(bits=4, block_size=16, is_symmetric=False,
                                    accuracy_level=None, quant_format="QOperator",
                                    op_types_to_quantize=("MatMul", "Gather"),
                                    quant_axes=(("MatMul", 0), ("Gather", 1)))),
    "qdq_int8": ("genai", ["llama"], "int8_per_channel", {}),
    "qdq_int4": ("genai", ["llama"], "nbits",
                 dict(bits=4, block_size=32, is_symmetric=True, accuracy_level=None,
                      quant_format="QDQ")),
    "qdq_uint4": ("genai", ["llama"], "nbits",
                  dict(bits=4, block_size=32, is_symmetric=False, accuracy_level=None,
                       quant_format="QDQ")),
    # MatMulConstBOnly: no MatMul of two activations; OpTypesToExcludeOutputQuantization: the
    # quantizer otherwise also puts a QuantizeLinear -> DequantizeLinear pair on every MatMul
    # output, logits included (which would make most greedy steps ties).
    "qdq_static": ("genai", ["llama", "qwen2"], "static",
                   dict(quant_format="QDQ", op_types_to_quantize=["MatMul"], per_channel=True,
                        reduce_range=False, activation_type="QUInt8", weight_type="QInt8",
                        calibrate_method="MinMax",
                        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True,
                                       "MatMulConstBOnly": True,
                                       "OpTypesToExcludeOutputQuantization": ["MatMul"]})),
}
FORM_DOC = {
    "genai_int4": "the arch's genai fixture with every constant-weight MatMul (q/k/v, o, gate, up, "
                  "down, lm_head) replaced by com.microsoft MatMulNBits (bits 4, block_size 32, "
                  "symmetric: no zero_points input, implied zero point 8; no accuracy_level: float "
                  "compute); B uint8 [N, K/32, 16] (two 4-bit values a byte, low nibble first), "
                  "scales f32 [N, K/32]",
    "genai_int4_asym": "as genai_int4 with block_size 64, asymmetric: zero_points uint8 "
                       "[N, ceil(blocks/2)] (4-bit, low nibble first); K 32 is one partial block "
                       "(padded in B), K 64 one full block",
    "genai_int4_gather": "as genai_int4, and the embedding Gather replaced by com.microsoft "
                         "GatherBlockQuantized(int4 table [V, H], input_ids, scales f32 "
                         "[V, H/32]; gather_axis 0, quantize_axis 1, block_size 32; no zero "
                         "points: symmetric)",
    "genai_int4_gather_asym": "as genai_int4_gather with block_size 16 (MatMulNBits too), "
                              "asymmetric: uint4 table and uint4 zero points [V, H/16]; "
                              "MatMulNBits with packed uint8 zero_points",
    "qdq_int8": "the arch's genai fixture with every constant-weight MatMul B [K, N] replaced by "
                "DequantizeLinear(int8 [K, N], scale f32 [N], zero point int8 [N] of zeros, "
                "axis 1: per output channel) -> MatMul",
    "qdq_int4": "the arch's genai fixture with every constant-weight MatMul B [K, N] replaced by "
                "DequantizeLinear(int4 [K, N], scale f32 [K/32, N], axis 0, block_size 32; no zero "
                "point: symmetric) -> MatMul (opset 21 blocked quantization)",
    "qdq_uint4": "as qdq_int4, asymmetric: uint4 [K, N] weights and uint4 zero points [K/32, N]",
    "qdq_static": "the arch's genai fixture statically quantized by onnxruntime's quantize_static "
                  "(QDQ format, MatMul only): each constant-weight MatMul reads its activation "
                  "through QuantizeLinear(x, scale f32 [], zero point uint8 []) -> "
                  "DequantizeLinear (per tensor, asymmetric, MinMax-calibrated on the prefill of "
                  "the reference prompts; one pair per tensor, shared by the MatMuls that read it: "
                  "q/k/v, gate/up) and its weight through DequantizeLinear(int8 [K, N], scale f32 "
                  "[N], zero point int8 [N] of zeros, axis 1); MatMul outputs, GroupQueryAttention "
                  "and the norms stay float; a tied embedding (qwen2) is gathered from "
                  "Transpose(DequantizeLinear(int8 lm_head weight))",
}
# What Folio does with each fixture, as build.py's SUPPORT.
SUPPORT = {f"{arch}/{form}": "supported" for form, (_, archs, _, _) in QFORMS.items()
           for arch in archs}


def quantize_nbits(model, settings):
    cfg = DefaultWeightOnlyQuantConfig(
        **{**settings, "quant_format": getattr(QuantFormat, settings["quant_format"])})
    q = MatMulNBitsQuantizer(model, algo_config=cfg)
    q.process()
    return q.model.model


class PromptReader(CalibrationDataReader):
    """The prefill feeds (empty past) of the reference prompt cases, one batch a case."""

    def __init__(self, feeds):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def calibration_feeds(src_path, dim_values, cases):
    _, io_ = rd.ort_runner(src_path)
    io_.dim_values = dim_values
    feeds = []
    for c in cases:
        ids, mask = rd.pad_left(rd.PROMPTS[c])
        f = {"input_ids": ids}
        if io_.has_mask:
            f["attention_mask"] = mask
        if io_.has_pos:
            f["position_ids"] = rd.positions_from_mask(mask, ids.shape[1])
        f.update(io_.empty_past(ids.shape[0]))
        feeds.append(f)
    return feeds


def quantize_static_qdq(model, settings, feeds):
    enums = {"quant_format": QuantFormat, "activation_type": QuantType, "weight_type": QuantType,
             "calibrate_method": CalibrationMethod}
    kwargs = {k: getattr(enums[k], v) if k in enums else v for k, v in settings.items()}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model.onnx"
        quantize_static(model, str(out), PromptReader(feeds), **kwargs)
        return onnx.load(str(out))


def constant_matmuls(graph):
    """{node index: weight initializer} of the MatMuls whose B is a constant 2-D weight."""
    inits = {i.name: i for i in graph.initializer}
    return {i: inits[n.input[1]] for i, n in enumerate(graph.node)
            if n.op_type == "MatMul" and n.input[1] in inits and len(inits[n.input[1]].dims) == 2}


def quantize_int8_per_channel(model):
    """MatMul(A, W) -> MatMul(A, DequantizeLinear(q, s, z, axis=1)), q = clip(round(W / s), -127,
    127) int8, s = max|W[:, n]| / 127 per output column n (1 where a column is zero), z = 0."""
    g = model.graph
    nodes = []
    targets = constant_matmuls(g)
    done = set()
    for i, n in enumerate(g.node):
        w = targets.get(i)
        if w is None:
            nodes.append(n)
            continue
        base = w.name
        if base not in done:  # a weight shared by several MatMuls is quantized once
            done.add(base)
            wf = numpy_helper.to_array(w).astype(np.float32)
            amax = np.abs(wf).max(axis=0)
            scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
            q = np.clip(np.rint(wf / scale), -127, 127).astype(np.int8)
            g.initializer.extend([numpy_helper.from_array(q, base + "_DQ_Q8"),
                                  numpy_helper.from_array(scale, base + "_DQ_scales"),
                                  numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8),
                                                          base + "_DQ_zero_points")])
            nodes.append(onnx.helper.make_node(
                "DequantizeLinear", [base + "_DQ_Q8", base + "_DQ_scales",
                                     base + "_DQ_zero_points"],
                [base + "_DQ_Q8_output"], name=n.name + "_DQ_Q8", axis=1))
        out = base + "_DQ_Q8_output"
        nodes.append(onnx.helper.make_node("MatMul", [n.input[0], out], list(n.output),
                                           name=n.name + "_matmul_Q8"))
    del g.node[:]
    g.node.extend(nodes)
    used = {x for n in g.node for x in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


# --- dequantization in numpy (the check of what the graphs mean) -------------------------------

def unpack4(raw, count, signed):
    """count 4-bit values, two a byte, the first in the low nibble."""
    b = np.frombuffer(raw, dtype=np.uint8)
    v = np.stack([b & 0xF, b >> 4], axis=-1).reshape(-1)[:count].astype(np.int32)
    return np.where(v >= 8, v - 16, v) if signed else v


def tensor_values(t):
    """Integer values of an initializer (int4/uint4 unpacked), as int32."""
    count = int(np.prod(t.dims)) if t.dims else 1
    if t.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
        raw = t.raw_data if t.HasField("raw_data") else bytes(np.asarray(t.int32_data, np.uint8))
        return unpack4(raw, count, t.data_type == onnx.TensorProto.INT4).reshape(tuple(t.dims))
    return numpy_helper.to_array(t).astype(np.int32 if t.data_type != onnx.TensorProto.FLOAT
                                           else np.float32)


def attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def dequant_matmulnbits(n, inits):
    K, N, bits, bs = attr(n, "K"), attr(n, "N"), attr(n, "bits"), attr(n, "block_size")
    assert bits == 4, bits
    nb = (K + bs - 1) // bs
    q = unpack4(inits[n.input[1]].raw_data, N * nb * bs, signed=False).reshape(N, nb, bs)
    s = numpy_helper.to_array(inits[n.input[2]]).reshape(N, nb, 1)
    if len(n.input) > 3 and n.input[3]:
        zp = unpack4(inits[n.input[3]].raw_data, N * ((nb + 1) // 2) * 2, signed=False)
        z = zp.reshape(N, -1)[:, :nb].reshape(N, nb, 1)
    else:
        z = 8
    w = ((q - z) * s).reshape(N, nb * bs)[:, :K]
    return w.T.astype(np.float32)


def dequant_gather_table(n, inits):
    """The float table of a GatherBlockQuantized with int4/uint4 data (as ONNX Runtime's
    quantizer writes it: gather_axis 0, quantize_axis 1; absent zero points are 0)."""
    assert (attr(n, "gather_axis", 0), attr(n, "quantize_axis", 1)) == (0, 1), n.name
    data = inits[n.input[0]]
    assert data.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4), n.name
    z = tensor_values(inits[n.input[3]]) if len(n.input) > 3 and n.input[3] else 0
    return dequant_blocked(tensor_values(data), numpy_helper.to_array(inits[n.input[2]]), z,
                           axis=1, bs=attr(n, "block_size", 128))


def dequant_blocked(q, s, z, axis, bs):
    """(q - z) * s for DequantizeLinear's scale forms: blocked along `axis` (bs > 0: scale and
    zero point rows repeated bs times) or per axis (a 1-D scale along `axis`)."""
    s = np.asarray(s, dtype=np.float32)
    if bs:
        def expand(v):
            v = np.repeat(v, bs, axis=axis)
            return v[:q.shape[0]] if axis == 0 else v[:, :q.shape[1]]
        s = expand(s)
        z = z if np.isscalar(z) else expand(z)
    else:
        shape = [1] * q.ndim
        shape[axis] = -1
        s = s.reshape(shape)
        z = z if np.isscalar(z) else np.asarray(z).reshape(shape)
    return ((q - z) * s).astype(np.float32)


def dequant_dq(n, inits):
    z = tensor_values(inits[n.input[2]]) if len(n.input) > 2 and n.input[2] else 0
    return dequant_blocked(tensor_values(inits[n.input[0]]), numpy_helper.to_array(inits[n.input[1]]),
                           z, attr(n, "axis", 1), attr(n, "block_size", 0))


def float_qdq_nodes(q, dq, inits):
    """Float ops of QuantizeLinear(x, s, z) -> DequantizeLinear with the same s and z, by the
    ONNX definition: y = (clip(round(x / s) + z, qmin, qmax) - z) * s, Round being half to even."""
    x, s, z = q.input
    assert list(dq.input) == [q.output[0], s, z], (q.name, dq.name)
    zt = inits[z]
    info = np.iinfo(onnx.helper.tensor_dtype_to_np_dtype(zt.data_type))
    base, y = dq.output[0], dq.output[0]
    zf = np.array(numpy_helper.to_array(zt), np.float32)
    consts = [numpy_helper.from_array(zf, base + "_zf"),
              numpy_helper.from_array(np.array(info.min, np.float32), base + "_qmin"),
              numpy_helper.from_array(np.array(info.max, np.float32), base + "_qmax")]
    mk = onnx.helper.make_node
    nodes = [mk("Div", [x, s], [base + "_div"], name=base + "_div"),
             mk("Round", [base + "_div"], [base + "_round"], name=base + "_round"),
             mk("Add", [base + "_round", base + "_zf"], [base + "_add"], name=base + "_add"),
             mk("Clip", [base + "_add", base + "_qmin", base + "_qmax"], [base + "_clip"],
                name=base + "_clip"),
             mk("Sub", [base + "_clip", base + "_zf"], [base + "_sub"], name=base + "_sub"),
             mk("Mul", [base + "_sub", s], [y], name=base + "_mul")]
    return nodes, consts


def dequantized_model(model):
    """The quantized graph with each quantized weight turned back into a float MatMul weight and
    each activation QuantizeLinear -> DequantizeLinear pair into float ops."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    dq_out = {}
    for n in g.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in inits:
            dq_out[n.output[0]] = dequant_dq(n, inits)
    quantized = {n.output[0]: n for n in g.node if n.op_type == "QuantizeLinear"}
    readers = {}
    for n in g.node:
        for x in n.input:
            readers[x] = readers.get(x, 0) + 1
    nodes, extra = [], []
    for n in g.node:
        if n.op_type == "QuantizeLinear":
            assert readers.get(n.output[0]) == 1, n.name  # its DequantizeLinear alone
        elif n.op_type == "DequantizeLinear" and n.input[0] in quantized:
            fnodes, consts = float_qdq_nodes(quantized[n.input[0]], n, inits)
            nodes += fnodes
            extra += consts
        elif n.op_type == "MatMulNBits":
            name = n.input[1] + "_dequantized"
            extra.append(numpy_helper.from_array(dequant_matmulnbits(n, inits), name))
            nodes.append(onnx.helper.make_node("MatMul", [n.input[0], name], list(n.output),
                                               name=n.name + "_dequantized"))
        elif n.op_type == "GatherBlockQuantized":
            name = n.input[0] + "_dequantized"
            extra.append(numpy_helper.from_array(dequant_gather_table(n, inits), name))
            nodes.append(onnx.helper.make_node("Gather", [name, n.input[1]], list(n.output),
                                               name=n.name + "_dequantized", axis=0))
        elif n.op_type == "DequantizeLinear" and n.output[0] in dq_out:
            extra.append(numpy_helper.from_array(dq_out[n.output[0]], n.output[0]))
        else:
            nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(extra)
    return m


def tensor_desc(t):
    """e.g. 'uint8[64, 1, 16]', 'int4[32, 64]'."""
    if t.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
        dtype = onnx.TensorProto.DataType.Name(t.data_type).lower()
    else:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).name
    return f"{dtype}{list(t.dims)}"


def quant_summary(model):
    """The quantized nodes, one item per distinct (op, attributes, input types and shapes), with
    their count; "activation" = a computed input."""
    inits = {i.name: i for i in model.graph.initializer}
    seen = {}
    for n in model.graph.node:
        if n.op_type not in ("MatMulNBits", "GatherBlockQuantized", "QuantizeLinear",
                             "DequantizeLinear"):
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        ins = [tensor_desc(inits[x]) if x in inits else "activation" for x in n.input if x]
        key = json.dumps([n.op_type, attrs, ins], sort_keys=True)
        seen[key] = seen.get(key, 0) + 1
    out = []
    for key, count in seen.items():
        op, attrs, ins = json.loads(key)
        out.append({"op": op, "attributes": attrs, "inputs": ins, "count": count})
    return out


# --- build.py's conventions, without its torch import --------------------------------------------


# ONNX Runtime's CPU session fuses DequantizeLinear -> MatMul into MatMulNBits with
# accuracy_level 4 (int8-quantized activations) unless told otherwise: its logits then differ from
# the graph's float semantics by up to 0.4 here. Level 0 keeps float compute; MatMulNBits nodes
# with their own (absent) accuracy_level are not affected.
SESSION_CONFIG = {"session.qdq_matmulnbits_accuracy_level": "0"}
# Statically quantized graphs: with optimizations on, ONNX Runtime fuses each
# DequantizeLinear -> MatMul pair of activation and weight (and the QuantizeLinear before it) into
# an integer MatMul, whose logits are not the graph's float semantics. Off, QuantizeLinear and
# DequantizeLinear run as the separate float-in, float-out ops the ONNX definition gives.
GRAPH_OPT_LEVEL = {"static": "ORT_DISABLE_ALL"}


def session_settings(how):
    """(reference_session_config, reference_graph_optimization_level) of a form's references."""
    if how in GRAPH_OPT_LEVEL:
        return None, GRAPH_OPT_LEVEL[how]
    return SESSION_CONFIG, None


def ort_runner(model, dim_values, how, optimized=False):
    """refdriver's ONNX Runtime runner (single-threaded CPU session) with the form's session
    settings (optimized: ONNX Runtime's default optimization level instead), on an in-memory
    model."""
    config, level = session_settings(how)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(model, str(path))
        run, io_ = rd.ort_runner(path, session_config=config,
                                 graph_optimization_level=None if optimized else level)
    io_.dim_values = dim_values
    return run, io_


def producer(how, settings, src, cases):
    versions = (f"onnxruntime {onnxruntime.__version__} (onnx {onnx.__version__}, onnx-ir "
                f"{version('onnx-ir')}, numpy {np.__version__})")
    if how == "nbits":
        args = ", ".join(f"{k}={'QuantFormat.' + v if k == 'quant_format' else v}"
                         for k, v in settings.items())
        return (f"{versions}: onnxruntime.quantization.matmul_nbits_quantizer."
                f"MatMulNBitsQuantizer(model, algo_config=DefaultWeightOnlyQuantConfig({args}))"
                f".process() on {src}")
    if how == "static":
        enums = {"quant_format": "QuantFormat", "activation_type": "QuantType",
                 "weight_type": "QuantType", "calibrate_method": "CalibrationMethod"}
        args = ", ".join(f"{k}={enums[k] + '.' + v if k in enums else repr(v)}"
                         for k, v in settings.items())
        return (f"{versions}: onnxruntime.quantization.quantize_static(model, out, reader, "
                f"{args}) on {src}; reader: the prefill feeds (empty past) of the cases "
                f"{', '.join(cases)}, one batch each")
    return (f"numpy {np.__version__} rewrite (models/zoo-hf/quantize.py "
            f"quantize_int8_per_channel) on {src}, saved with onnx {onnx.__version__}; references "
            f"by onnxruntime {onnxruntime.__version__}")


def cases_differing(res, src_refs):
    out = {}
    for c, r in res.items():
        a, b = r["tokens"], src_refs[c]["tokens"]
        if not (a == b).all():
            first = int(np.argmax((a != b).any(axis=0)))
            margin = rd.top2_margin(src_refs[c]["step_logits"][:, first])
            out[c] = {"first_differing_step": first, "fp32_top2_margin_there": round(margin, 6)}
    return out


def build(arch, form, manifest_entries):
    src_form, _, how, settings = QFORMS[form]
    src_name = f"{arch}/{src_form}"
    src = next((e for e in manifest_entries if e["name"] == src_name), None)
    if src is None:
        raise SystemExit(f"{src_name}: not in manifest.json (build it with build.py first)")
    src_path = HERE / src["file"]
    model = onnx.load(str(src_path))
    dim_values = src.get("dim_values", {})
    cases = list(src["cases"])  # the source's cases (batch2 left out for GroupQueryAttention)
    if how == "nbits":
        qmodel = quantize_nbits(model, settings)
    elif how == "static":
        qmodel = quantize_static_qdq(model, settings,
                                     calibration_feeds(src_path, dim_values, cases))
    else:
        qmodel = quantize_int8_per_channel(model)
    path = HERE / arch / f"{form}.onnx"
    onnx.save(qmodel, str(path))
    qmodel = onnx.load(str(path))
    run, io_ = ort_runner(qmodel, dim_values, how)
    res = {c: rd.generate(run, io_, rd.PROMPTS[c]) for c in cases}
    ref = HERE / arch / f"{form}.ref.npz"
    save_refs(ref, res)
    # ONNX Runtime's quantized kernels against float MatMuls on the same (dequantized) weights,
    # fed the quantized run's tokens so that every step compares the same context.
    drun, dio = ort_runner(dequantized_model(qmodel), dim_values, how)
    dres = {c: rd.generate(drun, dio, rd.PROMPTS[c], forced_tokens=res[c]["tokens"])
            for c in cases}
    dq_diff = max_diff(res, dres)
    dq_tok = all((res[c]["tokens"] == dres[c]["tokens"]).all() for c in cases)
    fused = None
    if how in GRAPH_OPT_LEVEL:  # how far ONNX Runtime's default (fused integer) kernels are
        frun, fio = ort_runner(qmodel, dim_values, how, optimized=True)
        fres = {c: rd.generate(frun, fio, rd.PROMPTS[c], forced_tokens=res[c]["tokens"])
                for c in cases}
        fused = {"max_abs_diff_logits": max_diff(res, fres),
                 "tokens_equal": all(bool((res[c]["tokens"] == fres[c]["tokens"]).all())
                                     for c in cases)}
    src_refs = load_refs(HERE / src["reference"])
    differ = cases_differing(res, src_refs)
    # Prefill logits share the prompt, so they compare the weights alone.
    prefill = max(float(np.abs(res[c]["prefill_logits"] - src_refs[c]["prefill_logits"])
                        [res[c]["attention_mask"].astype(bool)].max()) for c in cases)
    scale = max(float(np.abs(src_refs[c]["prefill_logits"]).max()) for c in cases)
    ins, outs = graph_io(qmodel)
    name = f"{arch}/{form}"
    config, level = session_settings(how)
    session = {"reference_session_config": config} if config is not None else \
        {"reference_graph_optimization_level": level, "ort_fused_vs_reference": fused}
    entry = {k: src[k] for k in ("architecture", "model_type", "model_class")}
    entry.update({
        "name": name,
        "form": form,
        "form_description": FORM_DOC[form],
        "source": src_name,
        "attn_implementation": src["attn_implementation"],
        "file": str(path.relative_to(HERE)),
        "bytes": os.path.getsize(path),
        "sha256_16": sha256([path]),
        "opset_imports": {(o.domain or "ai.onnx"): o.version for o in qmodel.opset_import},
        "ops": op_summary(qmodel),
        "quantized_nodes": quant_summary(qmodel),
        "config": src["config"],
        "inputs": ins,
        "outputs": outs,
        "cached": src["cached"],
        "has_position_ids": src["has_position_ids"],
        "reference": str(ref.relative_to(HERE)),
        "reference_bytes": os.path.getsize(ref),
        "new_tokens": rd.N_NEW,
        "seed": src["seed"],
        "generator": "models/zoo-hf/quantize.py",
        "producer": producer(how, settings, src["file"], cases),
        **session,
        "ort_vs_dequantized": {"max_abs_diff_logits": dq_diff, "tokens_equal": bool(dq_tok)},
        "ort_vs_fp32": {"source": src["reference"],
                        "max_abs_diff_prefill_logits": prefill,
                        "max_abs_fp32_prefill_logit": scale,
                        "cases_tokens_differ": differ,
                        "tokens_equal_cases": f"{len(cases) - len(differ)}/{len(cases)}"},
        "cases": cases_summary(res),
        "folio": SUPPORT.get(name, "untried"),
    })
    if dim_values:
        entry["dim_values"] = dim_values
    if src.get("notes"):
        entry["notes"] = src["notes"]
    print(f"  {name}: {entry['bytes']} B, ORT vs dequantized {dq_diff:.2e}, prefill vs fp32 "
          f"{prefill:.3f} (of {scale:.2f}), tokens equal to fp32 in "
          f"{entry['ort_vs_fp32']['tokens_equal_cases']} cases", flush=True)
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forms", nargs="*", choices=list(QFORMS), help="forms to rebuild")
    ap.add_argument("--only", nargs="*", help="architectures to rebuild")
    args = ap.parse_args()
    logging.getLogger().setLevel(logging.WARNING)  # the quantizer logs every node at INFO
    manifest_path = HERE / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entries = manifest["models"]
    built = {}
    for form in args.forms or list(QFORMS):
        for arch in QFORMS[form][1]:
            if args.only and arch not in args.only:
                continue
            built[f"{arch}/{form}"] = build(arch, form, entries)
    # Keep build.py's entries in their order; each architecture's quantized forms follow its
    # last entry, in QFORMS order.
    old_q = {e["name"]: e for e in entries if e["form"] in QFORMS}
    old_q.update(built)
    rest = [e for e in entries if e["form"] not in QFORMS]
    out = []
    for i, e in enumerate(rest):
        out.append(e)
        arch = e["architecture"]
        if i + 1 == len(rest) or rest[i + 1]["architecture"] != arch:
            out += [old_q[f"{arch}/{f}"] for f in QFORMS if f"{arch}/{f}" in old_q]
    manifest["models"] = out
    manifest["total_bytes"] = sum(e["bytes"] + e["reference_bytes"] for e in out)
    manifest["versions"]["onnx-ir"] = version("onnx-ir")
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(built)} fixtures written; {len(out)} in the manifest, "
          f"{manifest['total_bytes']} bytes in total (onnx + references)")


if __name__ == "__main__":
    main()
