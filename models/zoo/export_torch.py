"""Weight initialisation and torch.onnx.export (TorchScript exporter, opset 17) of the zoo models."""
import math

import numpy as np
import torch
import torch.nn as nn

from archs import CONFIGS, Conv1D, RMSNorm

OPSET = 17
OUT_PROJ = ("o_proj", "down_proj", "dense", "fc2", "out_proj", "fc_out", "dense_4h_to_h")


def init_weights(model, seed):
    """Deterministic, non-degenerate random weights: unit-ish activations, logits with a spread of
    a few units so greedy decoding moves around the vocabulary instead of repeating one token."""
    g = torch.Generator().manual_seed(seed)

    def normal(t, std, mean=0.0):
        with torch.no_grad():
            t.copy_(torch.randn(t.shape, generator=g, dtype=torch.float32) * std + mean)

    # With tied embeddings an untrained model tends to predict its input token again (the token's
    # own embedding dominates the residual stream); larger residual-branch outputs avoid that.
    tied = bool(model.cfg.get("tie"))
    seen = set()
    for name, mod in sorted(model.named_modules(), key=lambda x: x[0]):
        for pname, p in sorted(mod.named_parameters(recurse=False), key=lambda x: x[0]):
            if id(p) in seen:
                continue
            seen.add(id(p))
            full = f"{name}.{pname}"
            if isinstance(mod, nn.Embedding):
                normal(p, 0.25 if tied else 1.0)
            elif isinstance(mod, RMSNorm):
                mean = 0.0 if mod.one_plus else 1.0
                if mod.one_plus and name.endswith(("post_attention_layernorm", "post_feedforward_layernorm")):
                    mean = 4.0  # (1 + w) ~ 5: layer outputs outweigh the (tied) token embedding
                if tied and name == "norm":
                    mean += 1.0  # final norm: bring tied logits back to a spread of a few units
                normal(p, 0.1, mean)
            elif isinstance(mod, nn.LayerNorm) and tied and name == "ln_f" and pname == "weight":
                normal(p, 0.1, 2.0)
            elif isinstance(mod, nn.LayerNorm):
                normal(p, 0.1, 1.0 if pname == "weight" else 0.0)
            elif pname == "bias":
                normal(p, 0.1)
            elif isinstance(mod, Conv1D):
                gain = 1.0
                if tied and name.endswith("c_proj"):
                    gain = 5.0
                normal(p, gain / math.sqrt(p.shape[0]))
            elif isinstance(mod, nn.Linear):
                gain = 1.4
                if "lm_head" in full or "embed_out" in full:
                    gain = 3.0
                elif tied and name.endswith(OUT_PROJ):
                    gain = 3.0
                normal(p, gain / math.sqrt(p.shape[1]))
            else:
                raise RuntimeError(f"no init rule for {full}")
    return model


def build_model(arch, seed):
    cfg = CONFIGS[arch]
    torch.manual_seed(seed)
    model = cfg["cls"](cfg)
    init_weights(model, seed)
    model.eval()
    return model


class ExportWrapper(nn.Module):
    def __init__(self, model, form):
        super().__init__()
        self.model = model
        self.form = form
        self.n = model.cfg["layers"]

    def forward(self, *args):
        if self.form == "nocache":
            input_ids, attention_mask = args
            logits, _ = self.model(input_ids, attention_mask, None, None)
            return logits
        if self.form == "cached":
            input_ids, attention_mask, position_ids = args[:3]
            flat = args[3:]
        else:  # cached_nopos
            input_ids, attention_mask = args[:2]
            position_ids = None
            flat = args[2:]
        past = [(flat[2 * i], flat[2 * i + 1]) for i in range(self.n)]
        logits, presents = self.model(input_ids, attention_mask, position_ids, past)
        out = [logits]
        for k, v in presents:
            out += [k, v]
        return tuple(out)


def io_names(cfg, form):
    n = cfg["layers"]
    ins = ["input_ids", "attention_mask"]
    if form == "cached":
        ins.append("position_ids")
    outs = ["logits"]
    dyn = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    if form == "cached":
        dyn["position_ids"] = {0: "batch_size", 1: "sequence_length"}
    if form != "nocache":
        for i in range(n):
            for kv in ("key", "value"):
                ins.append(f"past_key_values.{i}.{kv}")
                outs.append(f"present.{i}.{kv}")
                dyn[f"past_key_values.{i}.{kv}"] = {0: "batch_size", 2: "past_sequence_length"}
                dyn[f"present.{i}.{kv}"] = {0: "batch_size", 2: "total_sequence_length"}
    return ins, outs, dyn


def dummy_inputs(cfg, form, batch=2, seq=3, past=4):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, cfg["vocab"], (batch, seq), generator=g)
    plen = 0 if form == "nocache" else past
    mask = torch.ones(batch, plen + seq, dtype=torch.int64)
    args = [ids, mask]
    if form == "cached":
        args.append(torch.arange(plen, plen + seq).unsqueeze(0).expand(batch, seq).contiguous())
    if form != "nocache":
        for _ in range(cfg["layers"]):
            for _ in range(2):
                args.append(torch.randn(batch, cfg["kv_heads"], plen, cfg["head_dim"], generator=g))
    return tuple(args)


def export(model, form, path):
    cfg = model.cfg
    ins, outs, dyn = io_names(cfg, form)
    wrapper = ExportWrapper(model, form).eval()
    with torch.no_grad():
        kwargs = dict(input_names=ins, output_names=outs, dynamic_axes=dyn,
                      opset_version=OPSET, do_constant_folding=True)
        if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 5):
            kwargs["dynamo"] = False
        torch.onnx.export(wrapper, dummy_inputs(cfg, form), str(path), **kwargs)
    return ins, outs


def torch_runner(model, form):
    """A refdriver-compatible callable running the torch model itself."""
    n = model.cfg["layers"]

    def run(feeds):
        with torch.no_grad():
            ids = torch.from_numpy(feeds["input_ids"])
            mask = torch.from_numpy(feeds["attention_mask"])
            pos = torch.from_numpy(feeds["position_ids"]) if "position_ids" in feeds else None
            past = None
            if form != "nocache":
                past = [(torch.from_numpy(feeds[f"past_key_values.{i}.key"]),
                         torch.from_numpy(feeds[f"past_key_values.{i}.value"])) for i in range(n)]
            logits, presents = model(ids, mask, pos, past)
            out = {"logits": logits.numpy()}
            if form != "nocache":
                for i, (k, v) in enumerate(presents):
                    out[f"present.{i}.key"] = k.numpy()
                    out[f"present.{i}.value"] = v.numpy()
            return out

    return run


def state_dict_numpy(model):
    return {k: v.detach().numpy().astype(np.float32).copy() for k, v in model.state_dict().items()}
