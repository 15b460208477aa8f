"""Fused-op forms of the zoo's Llama, written with onnx.helper (no exporter writes these):

  * fused_onnx23: ONNX opset 23 `RMSNormalization`, `RotaryEmbedding` and `Attention`
    (3D q/k/v with q_num_heads / kv_num_heads, past_key/past_value in, present_key/present_value
    out, is_causal=1 -- bottom-right aligned -- plus a boolean padding mask from attention_mask);
  * fused_ms: ONNX Runtime contrib ops as ONNX Runtime GenAI's model builder writes them:
    `SimplifiedLayerNormalization` (registered by ORT in the default ONNX domain, since 1),
    com.microsoft `SkipSimplifiedLayerNormalization`, `RotaryEmbedding` and `GroupQueryAttention`
    (seqlens_k = sum(attention_mask) - 1, total_sequence_length = attention_mask.shape[1]).

Both take exactly the weights of the torch Llama fixture (state_dict as numpy), so their logits
are cross-checked against llama/cached.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"


class _G:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(self, op, ins, outs=1, name=None, domain="", **attrs):
        self.n += 1
        base = name or f"/{op}_{self.n}"
        if isinstance(outs, int):
            outs = [f"{base}/out{i}" for i in range(outs)]
        self.nodes.append(helper.make_node(op, ins, outs, name=base, domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs


def rope_caches(cfg):
    """cos/sin caches [max_positions, rotary_dim/2], computed as the torch model does (float32)."""
    dim, base = cfg["rotary_dim"], cfg["rope_base"]
    inv = (1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))).astype(np.float32)
    pos = np.arange(cfg["max_positions"], dtype=np.float32)
    freqs = (pos[:, None] * inv[None, :]).astype(np.float32)
    return np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)


def _io(cfg, with_pos=True):
    n, kv, d = cfg["layers"], cfg["kv_heads"], cfg["head_dim"]
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])]
    if with_pos:
        ins.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", cfg["vocab"]])]
    for i in range(n):
        for k in ("key", "value"):
            ins.append(helper.make_tensor_value_info(f"past_key_values.{i}.{k}", TensorProto.FLOAT,
                                                     ["batch_size", kv, "past_sequence_length", d]))
            outs.append(helper.make_tensor_value_info(f"present.{i}.{k}", TensorProto.FLOAT,
                                                      ["batch_size", kv, "total_sequence_length", d]))
    return ins, outs


def _mlp(g, x, sd, p, i):
    gate = g.node("MatMul", [x, g.init(f"{p}.mlp.gate_proj.weight_T", sd[f"{p}.mlp.gate_proj.weight"].T)],
                  name=f"/model/layers.{i}/mlp/gate_proj/MatMul")
    up = g.node("MatMul", [x, g.init(f"{p}.mlp.up_proj.weight_T", sd[f"{p}.mlp.up_proj.weight"].T)],
                name=f"/model/layers.{i}/mlp/up_proj/MatMul")
    sig = g.node("Sigmoid", [gate], name=f"/model/layers.{i}/mlp/act_fn/Sigmoid")
    act = g.node("Mul", [gate, sig], name=f"/model/layers.{i}/mlp/act_fn/Mul")
    prod = g.node("Mul", [act, up], name=f"/model/layers.{i}/mlp/Mul")
    return g.node("MatMul", [prod, g.init(f"{p}.mlp.down_proj.weight_T", sd[f"{p}.mlp.down_proj.weight"].T)],
                  name=f"/model/layers.{i}/mlp/down_proj/MatMul")


def _qkv(g, h, sd, p, i):
    q = g.node("MatMul", [h, g.init(f"{p}.self_attn.q_proj.weight_T", sd[f"{p}.self_attn.q_proj.weight"].T)],
               name=f"/model/layers.{i}/attn/q_proj/MatMul")
    k = g.node("MatMul", [h, g.init(f"{p}.self_attn.k_proj.weight_T", sd[f"{p}.self_attn.k_proj.weight"].T)],
               name=f"/model/layers.{i}/attn/k_proj/MatMul")
    v = g.node("MatMul", [h, g.init(f"{p}.self_attn.v_proj.weight_T", sd[f"{p}.self_attn.v_proj.weight"].T)],
               name=f"/model/layers.{i}/attn/v_proj/MatMul")
    return q, k, v


def build_onnx23(cfg, sd):
    g = _G()
    eps = float(cfg["eps"])
    nh, kvh = cfg["heads"], cfg["kv_heads"]
    cos, sin = rope_caches(cfg)
    g.init("cos_cache", cos)
    g.init("sin_cache", sin)
    x = g.node("Gather", [g.init("model.embed_tokens.weight", sd["embed_tokens.weight"]), "input_ids"],
               name="/model/embed_tokens/Gather")
    mb = g.node("Cast", ["attention_mask"], name="/model/attn_mask/Cast", to=TensorProto.BOOL)
    m4 = g.node("Unsqueeze", [mb, g.init("unsqueeze_axes_1_2", np.array([1, 2], dtype=np.int64))],
                name="/model/attn_mask/Unsqueeze")  # [B,1,1,T]: padding only; causality from is_causal
    # ONNX Runtime wants the mask's last two dims to be exactly [S, T]: expand to [B,1,S,T]
    b_dim = g.node("Shape", ["attention_mask"], name="/model/attn_mask/Shape_B", start=0, end=1)
    t_dim = g.node("Shape", ["attention_mask"], name="/model/attn_mask/Shape_T", start=1, end=2)
    s_dim = g.node("Shape", ["input_ids"], name="/model/attn_mask/Shape_S", start=1, end=2)
    shp = g.node("Concat", [b_dim, g.init("one_1d", np.array([1], dtype=np.int64)), s_dim, t_dim],
                 name="/model/attn_mask/Concat", axis=0)
    m4 = g.node("Expand", [m4, shp], name="/model/attn_mask/Expand")
    for i in range(cfg["layers"]):
        p = f"layers.{i}"
        h = g.node("RMSNormalization", [x, g.init(f"{p}.input_layernorm.weight", sd[f"{p}.input_layernorm.weight"])],
                   name=f"/model/layers.{i}/input_layernorm/RMSNormalization", axis=-1, epsilon=eps, stash_type=1)
        q, k, v = _qkv(g, h, sd, p, i)
        q = g.node("RotaryEmbedding", [q, "cos_cache", "sin_cache", "position_ids"],
                   name=f"/model/layers.{i}/attn/q_rotary/RotaryEmbedding", num_heads=nh, interleaved=0)
        k = g.node("RotaryEmbedding", [k, "cos_cache", "sin_cache", "position_ids"],
                   name=f"/model/layers.{i}/attn/k_rotary/RotaryEmbedding", num_heads=kvh, interleaved=0)
        y = g.node("Attention", [q, k, v, m4, f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
                   [f"/model/layers.{i}/attn/Attention/Y", f"present.{i}.key", f"present.{i}.value"],
                   name=f"/model/layers.{i}/attn/Attention", q_num_heads=nh, kv_num_heads=kvh, is_causal=1)[0]
        o = g.node("MatMul", [y, g.init(f"{p}.self_attn.o_proj.weight_T", sd[f"{p}.self_attn.o_proj.weight"].T)],
                   name=f"/model/layers.{i}/attn/o_proj/MatMul")
        x = g.node("Add", [x, o], name=f"/model/layers.{i}/residual1/Add")
        h = g.node("RMSNormalization", [x, g.init(f"{p}.post_attention_layernorm.weight",
                                                  sd[f"{p}.post_attention_layernorm.weight"])],
                   name=f"/model/layers.{i}/post_attention_layernorm/RMSNormalization", axis=-1, epsilon=eps,
                   stash_type=1)
        x = g.node("Add", [x, _mlp(g, h, sd, p, i)], name=f"/model/layers.{i}/residual2/Add")
    h = g.node("RMSNormalization", [x, g.init("model.norm.weight", sd["norm.weight"])],
               name="/model/norm/RMSNormalization", axis=-1, epsilon=eps, stash_type=1)
    g.node("MatMul", [h, g.init("lm_head.weight_T", sd["lm_head.weight"].T)], ["logits"], name="/lm_head/MatMul")
    ins, outs = _io(cfg)
    graph = helper.make_graph(g.nodes, "folio_zoo_llama_fused_onnx23", ins, outs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)],
                              producer_name="folio-zoo (onnx.helper)", ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model


def build_ms(cfg, sd):
    g = _G()
    eps = float(cfg["eps"])
    nh, kvh = cfg["heads"], cfg["kv_heads"]
    cos, sin = rope_caches(cfg)
    g.init("cos_cache", cos)
    g.init("sin_cache", sin)
    x = g.node("Gather", [g.init("model.embed_tokens.weight", sd["embed_tokens.weight"]), "input_ids"],
               name="/model/embed_tokens/Gather")
    # GroupQueryAttention's sequence-length inputs, as ORT GenAI's builder computes them
    rs = g.node("ReduceSum", ["attention_mask", g.init("axes_1", np.array([1], dtype=np.int64))],
                name="/model/attn_mask/reduce_sum/ReduceSum", keepdims=0)
    sub = g.node("Sub", [rs, g.init("one_i64", np.array(1, dtype=np.int64))], name="/model/attn_mask/sub/Sub")
    seqlens_k = g.node("Cast", [sub], ["seqlens_k"], name="/model/attn_mask/seqlens_k/Cast", to=TensorProto.INT32)
    shp = g.node("Shape", ["attention_mask"], name="/model/attn_mask/shape/Shape")
    tl = g.node("Gather", [shp, g.init("idx_1", np.array(1, dtype=np.int64))], name="/model/attn_mask/gather/Gather",
                axis=0)
    total = g.node("Cast", [tl], ["total_seq_len"], name="/model/attn_mask/total_seq_len/Cast", to=TensorProto.INT32)
    n = cfg["layers"]
    residual = x
    h = g.node("SimplifiedLayerNormalization", [x, g.init("layers.0.input_layernorm.weight",
                                                          sd["layers.0.input_layernorm.weight"])],
               name="/model/layers.0/input_layernorm/SimplifiedLayerNormalization", axis=-1, epsilon=eps, stash_type=1)
    for i in range(n):
        p = f"layers.{i}"
        q, k, v = _qkv(g, h, sd, p, i)
        q = g.node("RotaryEmbedding", [q, "position_ids", "cos_cache", "sin_cache"], domain=MS,
                   name=f"/model/layers.{i}/attn/q_rotary/RotaryEmbedding", num_heads=nh, interleaved=0)
        k = g.node("RotaryEmbedding", [k, "position_ids", "cos_cache", "sin_cache"], domain=MS,
                   name=f"/model/layers.{i}/attn/k_rotary/RotaryEmbedding", num_heads=kvh, interleaved=0)
        y = g.node("GroupQueryAttention",
                   [q, k, v, f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens_k, total],
                   [f"/model/layers.{i}/attn/GroupQueryAttention/output", f"present.{i}.key", f"present.{i}.value"],
                   name=f"/model/layers.{i}/attn/GroupQueryAttention", domain=MS, num_heads=nh, kv_num_heads=kvh)[0]
        o = g.node("MatMul", [y, g.init(f"{p}.self_attn.o_proj.weight_T", sd[f"{p}.self_attn.o_proj.weight"].T)],
                   name=f"/model/layers.{i}/attn/o_proj/MatMul")
        base = f"/model/layers.{i}/post_attention_layernorm/SkipSimplifiedLayerNormalization"
        h, residual = g.node("SkipSimplifiedLayerNormalization",
                             [o, residual, g.init(f"{p}.post_attention_layernorm.weight",
                                                  sd[f"{p}.post_attention_layernorm.weight"])],
                             [base + "/output_0", "", "", base + "/output_3"], name=base, domain=MS, epsilon=eps)[::3]
        d = _mlp(g, h, sd, p, i)
        if i + 1 < n:
            wname, wkey = f"layers.{i + 1}.input_layernorm.weight", f"layers.{i + 1}.input_layernorm.weight"
            base = f"/model/layers.{i + 1}/input_layernorm/SkipSimplifiedLayerNormalization"
        else:
            wname, wkey = "model.norm.weight", "norm.weight"
            base = "/model/norm/SkipSimplifiedLayerNormalization"
        h, residual = g.node("SkipSimplifiedLayerNormalization", [d, residual, g.init(wname, sd[wkey])],
                             [base + "/output_0", "", "", base + "/output_3"], name=base, domain=MS,
                             epsilon=eps)[::3]
    g.node("MatMul", [h, g.init("lm_head.weight_T", sd["lm_head.weight"].T)], ["logits"], name="/lm_head/MatMul")
    ins, outs = _io(cfg)
    graph = helper.make_graph(g.nodes, "folio_zoo_llama_fused_ms", ins, outs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              producer_name="folio-zoo (onnx.helper)", ir_version=8)
    return model
