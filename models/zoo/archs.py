"""Tiny decoder-only models in plain torch, written in the style of the Hugging Face
implementations of the public architectures (same weight layouts, same op sequences as the
eager/sdpa code paths), so that `torch.onnx.export` (TorchScript exporter, opset 17) writes
graphs shaped like the ones Optimum writes for the real models.

Every model has the same forward signature:

    forward(input_ids[B,S] i64, attention_mask[B,P+S] i64, position_ids[B,S] i64 | None,
            past: list[(key[B,KV,P,D], value[B,KV,P,D])] | None)
        -> (logits[B,S,V], present: list[(key, value)])

When position_ids is None the positions come from the attention mask (cumsum - 1, as HF does
for generation), so the graph contains a CumSum.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# --------------------------------------------------------------------------------------------
# shared pieces


def positions_from_mask(attention_mask, seq_len):
    """HF generation style: cumsum(mask) - 1, padded slots set to 1, last `seq_len` columns."""
    pos = attention_mask.long().cumsum(-1) - 1
    pos = pos.masked_fill(attention_mask == 0, 1)
    return pos[:, -seq_len:]


def build_causal_mask(attention_mask, seq_len, past_len, dtype, window=None):
    """Additive 4D mask [B,1,S,P+S]: 0 where allowed, finfo.min elsewhere.

    Query i sits at cache slot past_len + i; key slot j is allowed when j <= that slot,
    (with a sliding window W) when slot - j < W, and when attention_mask[:, j] is 1.
    """
    total = attention_mask.shape[1]
    q_pos = torch.arange(seq_len, device=attention_mask.device) + past_len
    k_pos = torch.arange(total, device=attention_mask.device)
    allowed = k_pos[None, :] <= q_pos[:, None]
    if window is not None:
        allowed = allowed & ((q_pos[:, None] - k_pos[None, :]) < window)
    allowed = allowed[None, None, :, :] & attention_mask[:, None, None, :].bool()
    zero = torch.zeros((), dtype=dtype)
    neg = torch.full((), torch.finfo(dtype).min, dtype=dtype)
    return torch.where(allowed, zero, neg)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def repeat_kv(x, n_rep):
    """[B,KV,T,D] -> [B,KV*n_rep,T,D] (HF repeat_kv: expand + reshape)."""
    if n_rep == 1:
        return x
    b, kv, t, d = x.shape
    x = x[:, :, None, :, :].expand(b, kv, n_rep, t, d)
    return x.reshape(b, kv * n_rep, t, d)


class InvFreqRotary(nn.Module):
    """Modern HF rotary: cos/sin computed in-graph from an inv_freq buffer and position_ids."""

    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        freqs = (inv @ pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()  # [B,S,rot]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps, one_plus=False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim) if not one_plus else torch.zeros(dim))
        self.eps = eps
        self.one_plus = one_plus

    def forward(self, x):
        if self.one_plus:  # Gemma: computed in float32, scaled by (1 + w)
            out = x.float()
            out = out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + self.eps)
            out = out * (1.0 + self.weight.float())
            return out.type_as(x)
        dt = x.dtype
        h = x.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return self.weight * h.to(dt)


def gelu_new(x):
    """GPT-2 / Phi / GPT-J 'gelu_new': tanh approximation written out."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    """GPT-2 Conv1D: weight [in, out], y = addmm(b, x, W)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def _past_len(past):
    if past is None:
        return 0
    return past[0][0].shape[2]


def _cat_past(k, v, layer_past):
    if layer_past is not None:
        k = torch.cat((layer_past[0], k), dim=-2)
        v = torch.cat((layer_past[1], v), dim=-2)
    return k, v


def eager_attention(q, k, v, mask, scale, softcap=None):
    """q [B,H,S,D], k/v [B,H,T,D] (already repeated), mask additive [B,1,S,T]."""
    w = torch.matmul(q, k.transpose(2, 3)) * scale
    if softcap is not None:
        w = w / softcap
        w = torch.tanh(w)
        w = w * softcap
    w = w + mask
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, v)


# --------------------------------------------------------------------------------------------
# Llama / Mistral / Qwen2 (one family, differing in bias, window, rope base, tying, attention)


class LlamaAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        h, nh, kv, d = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        bias = cfg.get("qkv_bias", False)
        self.nh, self.kv, self.d = nh, kv, d
        self.q_proj = nn.Linear(h, nh * d, bias=bias)
        self.k_proj = nn.Linear(h, kv * d, bias=bias)
        self.v_proj = nn.Linear(h, kv * d, bias=bias)
        self.o_proj = nn.Linear(nh * d, h, bias=False)
        self.sdpa = cfg.get("attn_impl", "eager") == "sdpa"

    def forward(self, x, cos, sin, mask, layer_past):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.nh, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * c) + (rotate_half(q) * sn)
        k = (k * c) + (rotate_half(k) * sn)
        k, v = _cat_past(k, v, layer_past)
        present = (k, v)
        kr = repeat_kv(k, self.nh // self.kv)
        vr = repeat_kv(v, self.nh // self.kv)
        if self.sdpa:
            o = F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask, dropout_p=0.0)
        else:
            o = eager_attention(q, kr, vr, mask, 1.0 / math.sqrt(self.d))
        o = o.transpose(1, 2).reshape(b, s, self.nh * self.d)
        return self.o_proj(o), present


class LlamaMLP(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg["hidden"], cfg["eps"])
        self.self_attn = LlamaAttention(cfg, i)
        self.post_attention_layernorm = RMSNorm(cfg["hidden"], cfg["eps"])
        self.mlp = LlamaMLP(cfg["hidden"], cfg["intermediate"])

    def forward(self, x, cos, sin, mask, layer_past):
        r = x
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, mask, layer_past)
        x = r + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, present


class LlamaForCausalLM(nn.Module):
    """Llama, Mistral (cfg['window']) and Qwen2 (cfg['qkv_bias'], cfg['tie'])."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.layers = nn.ModuleList([LlamaLayer(cfg, i) for i in range(cfg["layers"])])
        self.norm = RMSNorm(cfg["hidden"], cfg["eps"])
        self.rotary_emb = InvFreqRotary(cfg["head_dim"], cfg["rope_base"])
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)
        if cfg.get("tie"):
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, attention_mask, position_ids=None, past=None):
        s = input_ids.shape[1]
        pl = _past_len(past)
        if position_ids is None:
            position_ids = positions_from_mask(attention_mask, s)
        x = self.embed_tokens(input_ids)
        mask = build_causal_mask(attention_mask, s, pl, x.dtype, self.cfg.get("window"))
        cos, sin = self.rotary_emb(position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, p = layer(x, cos, sin, mask, None if past is None else past[i])
            presents.append(p)
        x = self.norm(x)
        return self.lm_head(x), presents


# --------------------------------------------------------------------------------------------
# Gemma (Gemma-2 flavour: sandwich norms, soft-capping, alternating sliding window)


class GemmaAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        h, nh, kv, d = cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
        self.nh, self.kv, self.d = nh, kv, d
        self.scaling = cfg["query_pre_attn_scalar"] ** -0.5
        self.softcap = cfg.get("attn_softcap")
        self.q_proj = nn.Linear(h, nh * d, bias=False)
        self.k_proj = nn.Linear(h, kv * d, bias=False)
        self.v_proj = nn.Linear(h, kv * d, bias=False)
        self.o_proj = nn.Linear(nh * d, h, bias=False)

    def forward(self, x, cos, sin, mask, layer_past):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.nh, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * c) + (rotate_half(q) * sn)
        k = (k * c) + (rotate_half(k) * sn)
        k, v = _cat_past(k, v, layer_past)
        present = (k, v)
        kr = repeat_kv(k, self.nh // self.kv)
        vr = repeat_kv(v, self.nh // self.kv)
        o = eager_attention(q, kr, vr, mask, self.scaling, self.softcap)
        o = o.transpose(1, 2).reshape(b, s, self.nh * self.d)
        return self.o_proj(o), present


class GemmaMLP(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class GemmaLayer(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        h, eps = cfg["hidden"], cfg["eps"]
        self.input_layernorm = RMSNorm(h, eps, one_plus=True)
        self.self_attn = GemmaAttention(cfg, i)
        self.post_attention_layernorm = RMSNorm(h, eps, one_plus=True)
        self.pre_feedforward_layernorm = RMSNorm(h, eps, one_plus=True)
        self.mlp = GemmaMLP(h, cfg["intermediate"])
        self.post_feedforward_layernorm = RMSNorm(h, eps, one_plus=True)

    def forward(self, x, cos, sin, mask, layer_past):
        r = x
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, mask, layer_past)
        x = r + self.post_attention_layernorm(a)
        r = x
        x = r + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        return x, present


class GemmaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.layers = nn.ModuleList([GemmaLayer(cfg, i) for i in range(cfg["layers"])])
        self.norm = RMSNorm(cfg["hidden"], cfg["eps"], one_plus=True)
        self.rotary_emb = InvFreqRotary(cfg["head_dim"], cfg["rope_base"])
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # Gemma ties

    def forward(self, input_ids, attention_mask, position_ids=None, past=None):
        s = input_ids.shape[1]
        pl = _past_len(past)
        if position_ids is None:
            position_ids = positions_from_mask(attention_mask, s)
        x = self.embed_tokens(input_ids)
        x = x * torch.tensor(self.cfg["hidden"] ** 0.5, dtype=x.dtype)
        windows = self.cfg["layer_windows"]
        masks = {}
        cos, sin = self.rotary_emb(position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            w = windows[i]
            if w not in masks:
                masks[w] = build_causal_mask(attention_mask, s, pl, x.dtype, w)
            x, p = layer(x, cos, sin, masks[w], None if past is None else past[i])
            presents.append(p)
        x = self.norm(x)
        logits = self.lm_head(x)
        cap = self.cfg.get("final_softcap")
        if cap is not None:
            logits = logits / cap
            logits = torch.tanh(logits)
            logits = logits * cap
        return logits, presents


# --------------------------------------------------------------------------------------------
# GPT-2


class GPT2Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden"]
        self.nh, self.d, self.h = cfg["heads"], cfg["head_dim"], h
        self.c_attn = Conv1D(3 * h, h)
        self.c_proj = Conv1D(h, h)

    def _split(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.nh, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask, layer_past):
        q, k, v = self.c_attn(x).split(self.h, dim=2)
        q, k, v = self._split(q), self._split(k), self._split(v)
        k, v = _cat_past(k, v, layer_past)
        present = (k, v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        w = w + mask
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v)
        b, _, s, _ = o.shape
        o = o.permute(0, 2, 1, 3).contiguous().view(b, s, self.h)
        return self.c_proj(o), present


class GPT2MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = Conv1D(cfg["intermediate"], cfg["hidden"])
        self.c_proj = Conv1D(cfg["hidden"], cfg["intermediate"])

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.mlp = GPT2MLP(cfg)

    def forward(self, x, mask, layer_past):
        a, present = self.attn(self.ln_1(x), mask, layer_past)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, present


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.wpe = nn.Embedding(cfg["max_positions"], cfg["hidden"])
        self.h = nn.ModuleList([GPT2Block(cfg) for _ in range(cfg["layers"])])
        self.ln_f = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids, attention_mask, position_ids=None, past=None):
        s = input_ids.shape[1]
        pl = _past_len(past)
        if position_ids is None:
            position_ids = positions_from_mask(attention_mask, s)
        x = self.wte(input_ids) + self.wpe(position_ids)
        mask = build_causal_mask(attention_mask, s, pl, x.dtype)
        presents = []
        for i, blk in enumerate(self.h):
            x, p = blk(x, mask, None if past is None else past[i])
            presents.append(p)
        return self.lm_head(self.ln_f(x)), presents


# --------------------------------------------------------------------------------------------
# Phi-2 (parallel attention + MLP, one LayerNorm, partial rotary, dense with bias)


class PhiAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, nh, d = cfg["hidden"], cfg["heads"], cfg["head_dim"]
        self.nh, self.kv, self.d = nh, cfg["kv_heads"], d
        self.rot = cfg["rotary_dim"]
        self.q_proj = nn.Linear(h, nh * d, bias=True)
        self.k_proj = nn.Linear(h, self.kv * d, bias=True)
        self.v_proj = nn.Linear(h, self.kv * d, bias=True)
        self.dense = nn.Linear(nh * d, h, bias=True)

    def forward(self, x, cos, sin, mask, layer_past):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.nh, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
        q_rot, q_pass = q[..., : self.rot], q[..., self.rot:]
        k_rot, k_pass = k[..., : self.rot], k[..., self.rot:]
        q_rot = (q_rot * c) + (rotate_half(q_rot) * sn)
        k_rot = (k_rot * c) + (rotate_half(k_rot) * sn)
        q = torch.cat((q_rot, q_pass), dim=-1)
        k = torch.cat((k_rot, k_pass), dim=-1)
        k, v = _cat_past(k, v, layer_past)
        present = (k, v)
        kr = repeat_kv(k, self.nh // self.kv)
        vr = repeat_kv(v, self.nh // self.kv)
        w = torch.matmul(q.to(torch.float32), kr.to(torch.float32).transpose(2, 3)) / math.sqrt(self.d)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(v.dtype)
        o = torch.matmul(w, vr)
        o = o.transpose(1, 2).reshape(b, s, self.nh * self.d)
        return self.dense(o), present


class PhiMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg["hidden"], cfg["intermediate"])
        self.fc2 = nn.Linear(cfg["intermediate"], cfg["hidden"])

    def forward(self, x):
        return self.fc2(gelu_new(self.fc1(x)))


class PhiLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.self_attn = PhiAttention(cfg)
        self.mlp = PhiMLP(cfg)

    def forward(self, x, cos, sin, mask, layer_past):
        r = x
        h = self.input_layernorm(x)
        a, present = self.self_attn(h, cos, sin, mask, layer_past)
        return a + self.mlp(h) + r, present


class PhiForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.layers = nn.ModuleList([PhiLayer(cfg) for _ in range(cfg["layers"])])
        self.final_layernorm = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.rotary_emb = InvFreqRotary(cfg["rotary_dim"], cfg["rope_base"])
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=True)

    def forward(self, input_ids, attention_mask, position_ids=None, past=None):
        s = input_ids.shape[1]
        pl = _past_len(past)
        if position_ids is None:
            position_ids = positions_from_mask(attention_mask, s)
        x = self.embed_tokens(input_ids)
        mask = build_causal_mask(attention_mask, s, pl, x.dtype)
        cos, sin = self.rotary_emb(position_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, p = layer(x, cos, sin, mask, None if past is None else past[i])
            presents.append(p)
        return self.lm_head(self.final_layernorm(x)), presents


# --------------------------------------------------------------------------------------------
# GPT-NeoX (fused qkv, per-head interleaved layout [.., H, 3*D], partial rotary from tables)


class NeoXAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, nh, d = cfg["hidden"], cfg["heads"], cfg["head_dim"]
        self.nh, self.d, self.h = nh, d, h
        self.rot = cfg["rotary_dim"]
        self.query_key_value = nn.Linear(h, 3 * h)
        self.dense = nn.Linear(h, h)
        # cached cos/sin tables, gathered by position (older HF GPT-NeoX style)
        inv_freq = 1.0 / (cfg["rope_base"] ** (torch.arange(0, self.rot, 2).float() / self.rot))
        t = torch.arange(cfg["max_positions"]).float()
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, position_ids, mask, layer_past):
        b, s, _ = x.shape
        qkv = self.query_key_value(x)
        qkv = qkv.view(b, s, self.nh, 3 * self.d)
        q = qkv[..., : self.d].permute(0, 2, 1, 3)
        k = qkv[..., self.d: 2 * self.d].permute(0, 2, 1, 3)
        v = qkv[..., 2 * self.d:].permute(0, 2, 1, 3)
        cos = self.cos_cached[position_ids].unsqueeze(1)
        sin = self.sin_cached[position_ids].unsqueeze(1)
        q_rot, q_pass = q[..., : self.rot], q[..., self.rot:]
        k_rot, k_pass = k[..., : self.rot], k[..., self.rot:]
        q = torch.cat(((q_rot * cos) + (rotate_half(q_rot) * sin), q_pass), dim=-1)
        k = torch.cat(((k_rot * cos) + (rotate_half(k_rot) * sin), k_pass), dim=-1)
        k, v = _cat_past(k, v, layer_past)
        present = (k, v)
        w = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.d))
        w = w + mask
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v)
        o = o.permute(0, 2, 1, 3).contiguous().view(b, s, self.h)
        return self.dense(o), present


class NeoXMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(cfg["hidden"], cfg["intermediate"])
        self.dense_4h_to_h = nn.Linear(cfg["intermediate"], cfg["hidden"])

    def forward(self, x):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(x)))


class NeoXLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.post_attention_layernorm = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.attention = NeoXAttention(cfg)
        self.mlp = NeoXMLP(cfg)

    def forward(self, x, position_ids, mask, layer_past):
        a, present = self.attention(self.input_layernorm(x), position_ids, mask, layer_past)
        m = self.mlp(self.post_attention_layernorm(x))  # use_parallel_residual
        return m + a + x, present


class GPTNeoXForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_in = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.layers = nn.ModuleList([NeoXLayer(cfg) for _ in range(cfg["layers"])])
        self.final_layer_norm = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.embed_out = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)

    def forward(self, input_ids, attention_mask, position_ids=None, past=None):
        s = input_ids.shape[1]
        pl = _past_len(past)
        if position_ids is None:
            position_ids = positions_from_mask(attention_mask, s)
        x = self.embed_in(input_ids)
        mask = build_causal_mask(attention_mask, s, pl, x.dtype)
        presents = []
        for i, layer in enumerate(self.layers):
            x, p = layer(x, position_ids, mask, None if past is None else past[i])
            presents.append(p)
        return self.embed_out(self.final_layer_norm(x)), presents


# --------------------------------------------------------------------------------------------
# GPT-J (interleaved rotary from a sincos table, parallel attention + MLP)


class GPTJAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, nh, d = cfg["hidden"], cfg["heads"], cfg["head_dim"]
        self.nh, self.d, self.h = nh, d, h
        self.rot = cfg["rotary_dim"]
        self.q_proj = nn.Linear(h, h, bias=False)
        self.k_proj = nn.Linear(h, h, bias=False)
        self.v_proj = nn.Linear(h, h, bias=False)
        self.out_proj = nn.Linear(h, h, bias=False)
        inv_freq = 1.0 / (cfg["rope_base"] ** (torch.arange(0, self.rot, 2, dtype=torch.int64) / self.rot))
        sinusoid = torch.einsum("i , j -> i j", torch.arange(cfg["max_positions"], dtype=torch.int64).float(), inv_freq).float()
        self.register_buffer("embed_positions", torch.cat((torch.sin(sinusoid), torch.cos(sinusoid)), dim=1), persistent=False)

    @staticmethod
    def _rope(t, sin, cos):
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        return (t * cos) + (rotate_every_two(t) * sin)

    def forward(self, x, position_ids, mask, layer_past):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.nh, self.d)
        k = self.k_proj(x).view(b, s, self.nh, self.d)
        v = self.v_proj(x).view(b, s, self.nh, self.d).permute(0, 2, 1, 3)
        sincos = self.embed_positions[position_ids]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        k_rot, k_pass = k[:, :, :, : self.rot], k[:, :, :, self.rot:]
        q_rot, q_pass = q[:, :, :, : self.rot], q[:, :, :, self.rot:]
        k = torch.cat([self._rope(k_rot, sin, cos), k_pass], dim=-1).permute(0, 2, 1, 3)
        q = torch.cat([self._rope(q_rot, sin, cos), q_pass], dim=-1).permute(0, 2, 1, 3)
        k, v = _cat_past(k, v, layer_past)
        present = (k, v)
        w = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
        w = w / torch.tensor(math.sqrt(self.d), dtype=torch.float32)
        w = w + mask
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v)
        o = o.permute(0, 2, 1, 3).contiguous().view(b, s, self.h)
        return self.out_proj(o), present


class GPTJMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc_in = nn.Linear(cfg["hidden"], cfg["intermediate"])
        self.fc_out = nn.Linear(cfg["intermediate"], cfg["hidden"])

    def forward(self, x):
        return self.fc_out(gelu_new(self.fc_in(x)))


class GPTJBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.attn = GPTJAttention(cfg)
        self.mlp = GPTJMLP(cfg)

    def forward(self, x, position_ids, mask, layer_past):
        h = self.ln_1(x)
        a, present = self.attn(h, position_ids, mask, layer_past)
        return a + self.mlp(h) + x, present


class GPTJForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.h = nn.ModuleList([GPTJBlock(cfg) for _ in range(cfg["layers"])])
        self.ln_f = nn.LayerNorm(cfg["hidden"], eps=cfg["eps"])
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=True)

    def forward(self, input_ids, attention_mask, position_ids=None, past=None):
        s = input_ids.shape[1]
        pl = _past_len(past)
        if position_ids is None:
            position_ids = positions_from_mask(attention_mask, s)
        x = self.wte(input_ids)
        mask = build_causal_mask(attention_mask, s, pl, x.dtype)
        presents = []
        for i, blk in enumerate(self.h):
            x, p = blk(x, position_ids, mask, None if past is None else past[i])
            presents.append(p)
        return self.lm_head(self.ln_f(x)), presents


# --------------------------------------------------------------------------------------------
# configurations

COMMON = dict(vocab=256, hidden=32, layers=2, max_positions=128)

CONFIGS = {
    "llama": dict(COMMON, arch="llama", cls=LlamaForCausalLM, heads=4, kv_heads=2, head_dim=8,
                  intermediate=64, eps=1e-5, rope_base=10000.0, rotary="half_split", rotary_dim=8,
                  attn_impl="sdpa", tie=False, norm="rms", activation="silu_gated"),
    "mistral": dict(COMMON, arch="mistral", cls=LlamaForCausalLM, heads=4, kv_heads=2, head_dim=8,
                    intermediate=80, eps=1e-5, rope_base=10000.0, rotary="half_split", rotary_dim=8,
                    window=8, attn_impl="eager", tie=False, norm="rms", activation="silu_gated"),
    "qwen2": dict(COMMON, arch="qwen2", cls=LlamaForCausalLM, heads=4, kv_heads=2, head_dim=8,
                  intermediate=64, eps=1e-6, rope_base=1000000.0, rotary="half_split", rotary_dim=8,
                  qkv_bias=True, attn_impl="sdpa", tie=True, norm="rms", activation="silu_gated"),
    "gpt2": dict(COMMON, arch="gpt2", cls=GPT2LMHeadModel, heads=4, kv_heads=4, head_dim=8,
                 intermediate=128, eps=1e-5, rotary=None, learned_positions=True, tie=True,
                 fused_qkv="conv1d_concat", norm="layer", activation="gelu_tanh"),
    "phi2": dict(COMMON, arch="phi2", cls=PhiForCausalLM, heads=4, kv_heads=4, head_dim=8,
                 intermediate=128, eps=1e-5, rope_base=10000.0, rotary="half_split", rotary_dim=4,
                 parallel_attn_mlp=True, tie=False, lm_head_bias=True, norm="layer", activation="gelu_tanh"),
    "gpt_neox": dict(COMMON, arch="gpt_neox", cls=GPTNeoXForCausalLM, heads=2, kv_heads=2, head_dim=16,
                     intermediate=128, eps=1e-5, rope_base=10000.0, rotary="half_split", rotary_dim=4,
                     rotary_tables="cos_sin_cached_gather", fused_qkv="per_head_interleaved",
                     parallel_attn_mlp=True, tie=False, norm="layer", activation="gelu_erf"),
    "gptj": dict(COMMON, arch="gptj", cls=GPTJForCausalLM, heads=4, kv_heads=4, head_dim=8,
                 intermediate=128, eps=1e-5, rope_base=10000.0, rotary="interleaved", rotary_dim=4,
                 rotary_tables="sincos_gather", parallel_attn_mlp=True, tie=False, lm_head_bias=True,
                 norm="layer", activation="gelu_tanh"),
    "gemma": dict(COMMON, arch="gemma", cls=GemmaForCausalLM, heads=4, kv_heads=2, head_dim=16,
                  intermediate=64, eps=1e-6, rope_base=10000.0, rotary="half_split", rotary_dim=16,
                  query_pre_attn_scalar=24, attn_softcap=3.0, final_softcap=4.0, layer_windows=[8, None],
                  embed_scale=32 ** 0.5, tie=True, norm="rms_one_plus", activation="gelu_tanh_gated"),
}
