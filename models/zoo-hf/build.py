#!/usr/bin/env python3
"""Regenerate the Hugging Face zoo: tiny random-weight models built from transformers' own modeling
code (`XForCausalLM(config)`), exported to ONNX the way users export them, with ONNX Runtime
references in the protocol of models/zoo (models/zoo/refdriver.py) and a manifest.

    .venv/bin/python models/zoo-hf/build.py                 # everything
    .venv/bin/python models/zoo-hf/build.py --only llama gpt2
    .venv/bin/python models/zoo-hf/build.py --forms optimum optimum_nocache
    .venv/bin/python models/zoo-hf/build.py --forms genai
    .venv-dynamo/bin/python models/zoo-hf/build.py --forms dynamo dynamo_o23
    .venv/bin/python models/zoo-hf/build.py --search-seeds  # re-pick SEEDS

Needs models/zoo-hf/requirements.txt (torch, transformers, onnx, onnxruntime, numpy, optimum-onnx
for the optimum forms, onnxruntime-genai for the genai form, pinned); the dynamo forms need the
newer torch and onnxscript of models/zoo-hf/requirements-dynamo.txt, in a venv of their own.
Deterministic: fixed seeds and prompts, single-threaded ORT and torch, fixed zip timestamps.
Which fixtures Folio supports, and the compile error of the others, is kept in SUPPORT below and
written to the manifest; models/zoo-hf/run_check.py checks both in the test suite.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ZOO = HERE.parent / "zoo"
sys.path.insert(0, str(ZOO))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache, masking_utils  # noqa: E402
from transformers.pytorch_utils import Conv1D  # noqa: E402

import refdriver as rd  # noqa: E402
from build_all import graph_io, max_diff, op_summary, run_cases, save_refs, sha256  # noqa: E402
from fixture_io import cases_summary  # noqa: E402

torch.set_num_threads(1)

OPSET = 17
VOCAB = 256  # the protocol's prompts (refdriver.PROMPTS) use ids up to 255
MIN_MARGIN = 0.01
MIN_DISTINCT = 4

# Tiny configurations: 2 layers, hidden 32, vocab 256, 128 positions; GQA where the architecture
# has it; sliding windows (8) shorter than the longest test sequence (27).
COMMON = dict(vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=128)
LLAMA_LIKE = dict(COMMON, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                  num_key_value_heads=2)
CONFIGS = {
    "llama": ("llama", dict(LLAMA_LIKE, tie_word_embeddings=False)),
    "mistral": ("mistral", dict(LLAMA_LIKE, sliding_window=8)),
    "qwen2": ("qwen2", dict(LLAMA_LIKE, rope_theta=1e6, tie_word_embeddings=True)),
    "qwen3": ("qwen3", dict(LLAMA_LIKE, head_dim=16, tie_word_embeddings=True)),
    "phi": ("phi", dict(COMMON, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                        partial_rotary_factor=0.5)),
    "phi3": ("phi3", dict(LLAMA_LIKE, pad_token_id=0)),
    "gpt2": ("gpt2", dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=128,
                          n_inner=64)),
    "gpt_neox": ("gpt_neox", dict(COMMON, hidden_size=32, intermediate_size=64,
                                  num_attention_heads=2, rotary_pct=0.25)),
    "gemma": ("gemma", dict(LLAMA_LIKE, head_dim=16)),
    "gemma2": ("gemma2", dict(LLAMA_LIKE, head_dim=16, sliding_window=8, query_pre_attn_scalar=24,
                              attn_logit_softcapping=3.0, final_logit_softcapping=30.0)),
    "gptj": ("gptj", dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=128,
                          rotary_dim=4, n_inner=64)),
    "stablelm": ("stablelm", dict(LLAMA_LIKE, partial_rotary_factor=0.25)),
    "falcon": ("falcon", dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, max_position_embeddings=128)),
    "opt": ("opt", dict(COMMON, hidden_size=32, ffn_dim=64, num_attention_heads=4,
                        word_embed_proj_dim=32, pad_token_id=1)),
    "olmo": ("olmo", dict(LLAMA_LIKE)),
}
# First seed meeting MIN_MARGIN / MIN_DISTINCT (--search-seeds).
SEEDS = {"llama": 0, "mistral": 1, "qwen2": 0, "qwen3": 0, "phi": 0, "phi3": 0, "gpt2": 4,
         "gpt_neox": 4, "gemma": 1, "gemma2": 0, "gptj": 0, "stablelm": 8, "falcon": 0, "opt": 1,
         "olmo": 1}

# Forms: (attention implementation, cached, position_ids input).
FORMS = {
    "sdpa_cached": ("sdpa", True, True),
    "eager_cached": ("eager", True, True),
    "sdpa_cached_nopos": ("sdpa", True, False),
    "sdpa_nocache": ("sdpa", False, True),
    "sdpa_nocache_nopos": ("sdpa", False, False),
    "sdpa_cached_guard": ("sdpa", True, True),
    # position_ids: whatever Optimum's export config gives the architecture (None).
    "optimum": ("sdpa", True, None),
    "optimum_nocache": ("sdpa", False, None),
    # ONNX Runtime GenAI's model builder; the torch reference runs eager attention.
    "genai": ("eager", True, False),
    # The builder at -p fp16 (position_ids as the builder writes them).
    "genai_fp16": ("eager", True, None),
    # torch.onnx.export(..., dynamo=True) at opset 18 (its default) and 23.
    "dynamo": ("sdpa", True, True),
    "dynamo_o23": ("sdpa", True, True),
}
# The dynamo forms' opsets.
DYNAMO_OPSETS = {"dynamo": 18, "dynamo_o23": 23}
FORM_DOC = {
    "sdpa_cached": "torch.onnx.export (TorchScript, opset 17) of XForCausalLM with "
                   "attn_implementation='sdpa' (transformers' default): input_ids, attention_mask, "
                   "position_ids, past_key_values.{i}.key|value -> logits, present.{i}.key|value",
    "eager_cached": "as sdpa_cached with attn_implementation='eager'",
    "sdpa_cached_nopos": "as sdpa_cached without the position_ids input: the graph computes "
                         "positions from the past length (cache_position) or the attention_mask",
    "sdpa_nocache": "as sdpa_cached without past_key_values / present (full recompute): "
                    "input_ids, attention_mask, position_ids -> logits",
    "sdpa_nocache_nopos": "as sdpa_nocache without the position_ids input: positions Range(0, "
                          "sequence_length), or from the attention_mask",
    "sdpa_cached_guard": "as sdpa_cached with Where(IsNaN(p), 0, p) inserted after every Softmax "
                         "(onnx.helper), the guard for fully masked rows that newer torch and "
                         "Optimum SDPA exports write; torch 2.6's TorchScript exporter does not",
    "optimum": "optimum-cli export onnx --task text-generation-with-past of a save_pretrained "
               "folder (Optimum's own I/O names, opset, mask and position code; position_ids "
               "where Optimum's export config has them); SDPA attention, eager where transformers "
               "has no SDPA for the architecture",
    "optimum_nocache": "as optimum with --task text-generation: no past_key_values / present "
                       "(full recompute)",
    "genai": "python -m onnxruntime_genai.models.builder -i <save_pretrained folder> -p fp32 -e cpu "
             "(ONNX Runtime GenAI's model builder): input_ids, attention_mask, "
             "past_key_values.{i}.key|value -> logits, present.{i}.key|value; com.microsoft "
             "GroupQueryAttention with packed QKV and rotary inside (do_rotary, cos/sin caches, "
             "seqlens_k = ReduceSum(attention_mask) - 1), (Skip)SimplifiedLayerNormalization "
             "(Phi: LayerNormalization, SkipLayerNormalization, Gelu); saved as one file (the "
             "builder writes the weights to model.onnx.data)",
    "genai_fp16": "as genai with -p fp16: f16 weights and activations; for CPU the builder "
                  "writes com.microsoft MultiHeadAttention on keys and values repeated for GQA "
                  "(Unsqueeze -> Expand -> Reshape of the cache concat), an additive "
                  "attention_bias (causal + padding, -65504) and RotaryEmbedding with "
                  "position_ids; logits and the past/present are f16",
    "dynamo": "torch.onnx.export(..., dynamo=True, opset_version=18) (torch.export, then onnxscript's "
              "torchlib) of XForCausalLM with attn_implementation='sdpa' ('eager' where "
              "transformers has no SDPA attention: GPT-J) and transformers' own "
              "mask functions (vmap over the mask function; the padding mask is looked up with "
              "GatherND): I/O as sdpa_cached; batch_size, sequence_length and "
              "past_sequence_length as torch.export.Dim, the attention_mask's length "
              "Dim.AUTO (named by torch)",
    "dynamo_o23": "as dynamo at opset_version=23",
}
# Forms exported by optimum-cli, with its --task.
OPTIMUM_TASKS = {"optimum": "text-generation-with-past", "optimum_nocache": "text-generation"}
# Forms written by ONNX Runtime GenAI's model builder (see export_genai).
GENAI_FORMS = {"genai": "fp32", "genai_fp16": "fp16"}
# Forms with f16 activations: ONNX Runtime computes them in f16, so references carry f16
# rounding; their manifest entries set logits_rel_tol (HALF_REL_TOL) for the comparison.
HALF_FORMS = {"genai_fp16"}
HALF_REL_TOL = 2e-2
# Config changes for the builder's form. ONNX Runtime's CPU GroupQueryAttention rotates only
# head sizes that are multiples of 16: 2 query heads and 1 KV head of 16 (Qwen3 and Gemma set
# head_dim=16 already). The builder takes Phi-3 with max_position_embeddings !=
# original_max_position_embeddings for LongRoPE (and then fails without rope_scaling);
# transformers ignores the field without rope_scaling.
HEAD16 = dict(num_attention_heads=2, num_key_value_heads=1)
GENAI_CONFIG = {"llama": HEAD16, "mistral": HEAD16, "qwen2": HEAD16, "olmo": HEAD16,
                # Phi: one head of 32, so that its rotary half (16) gives cos/sin caches of 8
                # columns, the multiple of 8 ONNX Runtime's GroupQueryAttention rotates.
                "phi": dict(num_attention_heads=1),
                "phi3": dict(HEAD16, original_max_position_embeddings=128)}
# Forms made by rewriting the export (see add_nan_guard).
GUARDED_FORMS = {"sdpa_cached_guard"}
# The forms beyond the two cached ones are built for the architectures whose position code
# differs (rotary from cache_position, a learned position table, the attention_mask cumsum),
# to keep the committed fixtures small. None = every architecture.
POSITION_ARCHS = ["llama", "gpt2", "opt"]
FORM_ARCHS = {
    "sdpa_cached_nopos": POSITION_ARCHS,
    "sdpa_nocache": POSITION_ARCHS,
    "sdpa_nocache_nopos": POSITION_ARCHS,
    "sdpa_cached_guard": ["llama"],
    "dynamo_o23": POSITION_ARCHS,
    # Gemma 2 is left out: Optimum exports it with SDPA, which in transformers drops the attention
    # soft-cap, so ONNX Runtime disagrees with the soft-capped (eager) PyTorch model.
    "optimum": [a for a in CONFIGS if a != "gemma2"],
    # Gemma: Optimum gives it no position_ids input, so positions are Range(0, seq) in the graph.
    "optimum_nocache": POSITION_ARCHS + ["gemma"],
    # What the builder (onnxruntime-genai 0.15.2) supports of CONFIGS.
    # OLMo and Gemma 2 are left out: the builder's graphs disagree with transformers (greedy
    # tokens differ; max logit differences 16 and 36).
    "genai": ["llama", "mistral", "qwen2", "qwen3", "phi", "phi3", "gemma"],
    # Mistral is left out: the builder's f16 CPU graph (MultiHeadAttention) drops the sliding
    # window, so ONNX Runtime disagrees with transformers beyond 8 tokens.
    "genai_fp16": ["llama", "qwen2", "qwen3", "phi", "phi3", "gemma"],
}

# What Folio does with each fixture, measured with folioc/folio-run (run_check.py): "supported"
# or the compile-time error it gives (a substring of folioc's message). Fixtures not listed here
# have not been tried.
SUPPORT = {name: "supported" for name in [
    f"{arch}/{form}" for arch in ["llama", "mistral", "qwen2", "qwen3", "phi", "phi3", "gpt2",
                                  "gpt_neox", "gemma", "gemma2", "stablelm", "falcon", "opt", "olmo",
                                  "gptj"]
    for form in ["sdpa_cached", "eager_cached"]]}
SUPPORT.update({f"{arch}/{form}": "supported" for arch in POSITION_ARCHS
                for form in ["sdpa_cached_nopos", "sdpa_nocache", "sdpa_nocache_nopos"]})
SUPPORT["llama/sdpa_cached_guard"] = "supported"
SUPPORT.update({f"{arch}/{form}": "supported" for form in OPTIMUM_TASKS
                for arch in FORM_ARCHS[form]})
SUPPORT.update({f"{arch}/{form}": "supported" for form in GENAI_FORMS
                for arch in FORM_ARCHS[form]})
SUPPORT.update({f"{arch}/{form}": "supported" for form in DYNAMO_OPSETS
                for arch in FORM_ARCHS.get(form, CONFIGS)})
# Forms transformers itself cannot build, with its reason (filled in by build_arch).
NOT_BUILT = {}


def sdpa_mask_broadcast(batch_size, cache_position, kv_length, kv_offset=0,
                        mask_function=masking_utils.causal_mask_function, attention_mask=None, **kwargs):
    """transformers' boolean mask [B, 1, Q, KV] (True = attend), evaluated by broadcasting index
    tensors through the mask function instead of torch.vmap, which the TorchScript exporter cannot
    trace (optimum-onnx patches the mask functions the same way)."""
    padding_mask = masking_utils.prepare_padding_mask(attention_mask, kv_length, kv_offset)
    batch = torch.arange(batch_size)[:, None, None, None]
    head = torch.zeros(1, dtype=torch.long)[None, :, None, None]
    query = cache_position[None, None, :, None]
    key = (torch.arange(kv_length) + kv_offset)[None, None, None, :]
    mask = mask_function(batch, head, query, key)
    mask = mask.expand(batch_size, 1, cache_position.shape[0], kv_length)
    if padding_mask is not None:
        mask = mask * padding_mask[:, None, None, :]
    return mask


def eager_mask_broadcast(*args, dtype=torch.float32, **kwargs):
    mask = sdpa_mask_broadcast(*args, **kwargs)
    return torch.where(mask, torch.tensor(0.0, dtype=dtype), torch.finfo(dtype).min)


masking_utils.ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", sdpa_mask_broadcast)
masking_utils.ALL_MASK_ATTENTION_FUNCTIONS.register("eager", eager_mask_broadcast)


def make_config(arch, attn, extra=None):
    model_type, kwargs = CONFIGS[arch]
    cfg = AutoConfig.for_model(model_type, **{**kwargs, **(extra or {})})
    cfg._attn_implementation = attn
    cfg.use_cache = True
    return cfg


def init_weights(model, seed):
    """Unit-ish activations and logits with a spread of a few units (random init of transformers
    is 0.02-scaled: near-uniform logits, no greedy margin)."""
    g = torch.Generator().manual_seed(seed)
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    seen = set()
    for mname, mod in sorted(model.named_modules(), key=lambda x: x[0]):
        for pname, p in sorted(mod.named_parameters(recurse=False), key=lambda x: x[0]):
            if id(p) in seen:
                continue
            seen.add(id(p))
            full = f"{mname}.{pname}"

            def normal(std, mean=0.0):
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std + mean)

            if isinstance(mod, torch.nn.Embedding):
                normal(0.25 if tied and "pos" not in mname else 1.0)
            elif p.dim() == 1 and pname == "bias":
                normal(0.1)
            elif p.dim() == 1:
                # norms: Gemma's RMSNorm multiplies by (1 + w)
                one_plus = type(mod).__name__.startswith("Gemma")
                mean = 0.0 if one_plus else 1.0
                if model.config.model_type == "gemma2" and mname.endswith(
                        ("post_attention_layernorm", "post_feedforward_layernorm")):
                    mean = 4.0  # sandwich norms: layer outputs outweigh the tied embedding
                if tied and mname.endswith(("norm", "ln_f", "final_layer_norm", "final_layernorm")):
                    mean += 1.0
                normal(0.1, mean)
            elif isinstance(mod, Conv1D):
                gain = 5.0 if tied and mname.endswith("c_proj") else 1.0
                normal(gain / math.sqrt(p.shape[0]))
            elif p.dim() == 2:
                gain = 3.0 if ("lm_head" in full or "embed_out" in full) else 1.4
                if tied and mname.endswith(("o_proj", "down_proj", "dense", "fc2", "out_proj",
                                             "dense_4h_to_h", "fc_out")):
                    gain = 3.0
                normal(gain / math.sqrt(p.shape[1]))
            else:
                raise RuntimeError(f"no init rule for {full} {tuple(p.shape)}")
    return model


def optimum_versions():
    from importlib.metadata import version
    return {"optimum": version("optimum"), "optimum-onnx": version("optimum-onnx")}


def export_optimum(model, task, path):
    """`optimum-cli export onnx --task <task>` on a save_pretrained folder, run as a user runs it
    (its own process, single-threaded, offline), keeping only model.onnx."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "hf", Path(tmp) / "onnx"
        model.save_pretrained(src)
        cli = Path(sys.executable).parent / "optimum-cli"
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="",
                   HF_HUB_OFFLINE="1")
        p = subprocess.run([str(cli), "export", "onnx", "--model", str(src), "--task",
                            task, str(out)],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0 or not (out / "model.onnx").exists():
            raise RuntimeError("optimum-cli failed: " + (p.stderr.strip().splitlines() or ["?"])[-1])
        if any(f.name != "model.onnx" and "onnx" in f.name for f in out.iterdir()):
            raise RuntimeError(f"optimum-cli wrote more than model.onnx: {sorted(os.listdir(out))}")
        shutil.copyfile(out / "model.onnx", path)


def genai_versions():
    from importlib.metadata import version
    return {"onnxruntime-genai": version("onnxruntime-genai"), "onnx-ir": version("onnx-ir")}


def save_tokenizer(folder):
    """A word-level tokenizer over the 256 ids ("t0" .. "t255"): the builder copies the folder's
    tokenizer next to the model and fails without one; the references feed token ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", bos_token="t1",
                            eos_token="t2", pad_token="t0").save_pretrained(folder)


def export_genai(model, path, precision):
    """`python -m onnxruntime_genai.models.builder -i <folder> -o <out> -p <precision> -e cpu`
    on a save_pretrained folder, in its own process, as a user runs it; model.onnx and its
    model.onnx.data are saved as one file (the weights are tiny)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out, cache = Path(tmp) / "hf", Path(tmp) / "onnx", Path(tmp) / "cache"
        model.save_pretrained(src)
        save_tokenizer(src)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="",
                   HF_HUB_OFFLINE="1")
        p = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i",
                            str(src), "-o", str(out), "-p", precision, "-e", "cpu", "-c",
                            str(cache)], capture_output=True, text=True, env=env)
        if p.returncode != 0 or not (out / "model.onnx").exists():
            raise RuntimeError("model builder failed: " +
                               (p.stderr.strip().splitlines() or ["?"])[-1])
        m = onnx.load(str(out / "model.onnx"))  # with model.onnx.data
        onnx.save(m, str(path))
        cfg = json.loads((out / "genai_config.json").read_text())["model"]["decoder"]
        return {"head_size": cfg["head_size"]}


def build_model(arch, attn, seed, extra=None):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(make_config(arch, attn, extra),
                                             attn_implementation=attn)
    init_weights(model, seed)
    model.eval()
    return model


def cache_dims(model):
    cfg = model.config
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    if cfg.model_type == "falcon" and not cfg.new_decoder_architecture and cfg.multi_query:
        kv = 1
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return cfg.num_hidden_layers, kv, head_dim


class Wrapper(torch.nn.Module):
    """Flat tensors in and out, named as Optimum names them; the past goes in as a DynamicCache
    (full-length layers: windows are applied by the mask, as transformers' default cache for
    export does)."""

    def __init__(self, model, cached, with_pos):
        super().__init__()
        self.model = model
        self.cached = cached
        self.with_pos = with_pos
        self.layers = model.config.num_hidden_layers

    def forward(self, input_ids, attention_mask, *rest):
        rest = list(rest)
        pos = rest.pop(0) if self.with_pos else None
        if not self.cached:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              position_ids=pos, use_cache=False).logits
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(rest[2 * i], rest[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=pos,
                         past_key_values=cache, use_cache=True)
        res = [out.logits]
        for layer in out.past_key_values.layers:
            res += [layer.keys, layer.values]
        return tuple(res)


def io_names(model, cached, with_pos):
    n, _, _ = cache_dims(model)
    ins = ["input_ids", "attention_mask"] + (["position_ids"] if with_pos else [])
    outs = ["logits"]
    dyn = {"input_ids": {0: "batch_size", 1: "sequence_length"},
           "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
           "logits": {0: "batch_size", 1: "sequence_length"}}
    if with_pos:
        dyn["position_ids"] = {0: "batch_size", 1: "sequence_length"}
    if cached:
        for i in range(n):
            for kv in ("key", "value"):
                ins.append(f"past_key_values.{i}.{kv}")
                outs.append(f"present.{i}.{kv}")
                dyn[f"past_key_values.{i}.{kv}"] = {0: "batch_size", 2: "past_sequence_length"}
                dyn[f"present.{i}.{kv}"] = {0: "batch_size", 2: "total_sequence_length"}
    return ins, outs, dyn


def dummy_inputs(model, cached, with_pos, batch=2, seq=3, past=4):
    n, kv, d = cache_dims(model)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, VOCAB, (batch, seq), generator=g)
    plen = past if cached else 0
    args = [ids, torch.ones(batch, plen + seq, dtype=torch.int64)]
    if with_pos:
        args.append(torch.arange(plen, plen + seq).unsqueeze(0).expand(batch, seq).contiguous())
    if cached:
        for _ in range(2 * n):
            args.append(torch.randn(batch, kv, plen, d, generator=g))
    return tuple(args)


def export_dynamo(model, form, path):
    """torch.onnx.export(dynamo=True) as a user runs it on transformers' model: transformers' own
    mask functions (the broadcast rewrites above are for the TorchScript exporter only)."""
    if tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 9):
        raise SystemExit(f"{form}: torch {torch.__version__} cannot export transformers "
                         f"{transformers.__version__}'s masks with dynamo=True (vmap); run "
                         f"build.py in a venv with models/zoo-hf/requirements-dynamo.txt")
    _, cached, with_pos = FORMS[form]
    ins, outs, dyn = io_names(model, cached, with_pos)
    dims = {n: torch.export.Dim(n, min=1, max=4096)
            for n in ("batch_size", "sequence_length", "past_sequence_length")}
    shapes = [{axis: dims.get(name, torch.export.Dim.AUTO) for axis, name in dyn[n].items()}
              for n in ins]
    wrapper = Wrapper(model, cached, with_pos).eval()
    registry = masking_utils.ALL_MASK_ATTENTION_FUNCTIONS
    registry.register("sdpa", masking_utils.sdpa_mask)
    registry.register("eager", masking_utils.eager_mask)
    try:
        with torch.no_grad():
            torch.onnx.export(wrapper, dummy_inputs(model, cached, with_pos), str(path),
                              input_names=ins, output_names=outs,
                              dynamic_shapes=(shapes[0], shapes[1], tuple(shapes[2:])),
                              opset_version=DYNAMO_OPSETS[form], dynamo=True,
                              external_data=False, verbose=False)
    finally:
        registry.register("sdpa", sdpa_mask_broadcast)
        registry.register("eager", eager_mask_broadcast)
    # The exporter annotates every node with torch's source locations and module path
    # (metadata_props, ~1.8 KB a node, most of the file); they do not change what the graph
    # computes and are dropped to keep the fixtures small.
    m = onnx.load(str(path))
    for n in m.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    onnx.save(m, str(path))


def export(model, form, path):
    if form in DYNAMO_OPSETS:
        return export_dynamo(model, form, path)
    if form in GENAI_FORMS:
        return export_genai(model, path, GENAI_FORMS[form])
    if form in OPTIMUM_TASKS:
        export_optimum(model, OPTIMUM_TASKS[form], path)
        return None
    _, cached, with_pos = FORMS[form]
    ins, outs, dyn = io_names(model, cached, with_pos)
    wrapper = Wrapper(model, cached, with_pos).eval()
    with torch.no_grad():
        torch.onnx.export(wrapper, dummy_inputs(model, cached, with_pos), str(path),
                          input_names=ins, output_names=outs, dynamic_axes=dyn,
                          opset_version=OPSET, do_constant_folding=True, dynamo=False)
    return None


def add_nan_guard(path):
    """Inserts Where(IsNaN(p), 0, p) between every Softmax and its consumers, as newer SDPA
    exports guard the probabilities of fully masked rows."""
    m = onnx.load(str(path))
    g = m.graph
    g.initializer.append(onnx.helper.make_tensor("folio_guard_zero", onnx.TensorProto.FLOAT,
                                                 [], [0.0]))
    nodes = []
    renamed = {}
    for n in g.node:
        for i, name in enumerate(n.input):
            if name in renamed:
                n.input[i] = renamed[name]
        nodes.append(n)
        if n.op_type == "Softmax":
            p = n.output[0]
            renamed[p] = p + "_guarded"
            nodes.append(onnx.helper.make_node("IsNaN", [p], [p + "_isnan"], name=n.name + "_isnan"))
            nodes.append(onnx.helper.make_node("Where", [p + "_isnan", "folio_guard_zero", p],
                                               [p + "_guarded"], name=n.name + "_guard"))
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(m, str(path))


def torch_runner(model, form, with_pos):
    _, cached, _ = FORMS[form]
    ins, outs, _ = io_names(model, cached, with_pos)
    wrapper = Wrapper(model, cached, with_pos).eval()

    def run(feeds):
        with torch.no_grad():
            res = wrapper(*[torch.from_numpy(feeds[n]) for n in ins])
        res = res if isinstance(res, tuple) else (res,)
        return {n: r.numpy() for n, r in zip(outs, res)}

    return run, rd.GraphIO([(n, list(dummy_inputs(model, cached, with_pos)[i].shape))
                            for i, n in enumerate(ins)], [(n, []) for n in outs])


def torch_io(model, form, with_pos):
    _, cached, _ = FORMS[form]
    n, kv, d = cache_dims(model)
    ins = [("input_ids", ["b", "s"]), ("attention_mask", ["b", "t"])]
    if with_pos:
        ins.append(("position_ids", ["b", "s"]))
    if cached:
        for i in range(n):
            for k in ("key", "value"):
                ins.append((f"past_key_values.{i}.{k}", ["b", kv, "p", d]))
    return rd.GraphIO(ins, [])


def seed_ok(arch, seed):
    model = build_model(arch, "eager", seed)
    run, _ = torch_runner(model, "eager_cached", True)
    res = run_cases(run, torch_io(model, "eager_cached", True), list(rd.PROMPTS))
    margin = min(rd.top2_margin(r["step_logits"]) for r in res.values())
    distinct = min(len(set(t.tolist())) for r in res.values() for t in r["tokens"])
    return margin >= MIN_MARGIN and distinct >= MIN_DISTINCT, margin, distinct


def search_seeds(archs):
    found = {}
    for arch in archs:
        for seed in range(200):
            ok, margin, distinct = seed_ok(arch, seed)
            if ok:
                print(f"{arch}: seed {seed} (min margin {margin:.4f}, min distinct {distinct})",
                      flush=True)
                found[arch] = seed
                break
        else:
            print(f"{arch}: no seed below 200", flush=True)
    print("SEEDS =", json.dumps(found))
    return found


def producer(form, m):
    base = f"transformers {transformers.__version__}, torch {torch.__version__.split('+')[0]}"
    if form in GENAI_FORMS:
        v = genai_versions()
        return (f"onnxruntime-genai {v['onnxruntime-genai']} (onnx-ir {v['onnx-ir']}), {base}: "
                f"python -m onnxruntime_genai.models.builder -p {GENAI_FORMS[form]} -e cpu")
    if form in OPTIMUM_TASKS:
        v = optimum_versions()
        opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        return (f"optimum-onnx {v['optimum-onnx']} (optimum {v['optimum']}), {base}: optimum-cli "
                f"export onnx --task {OPTIMUM_TASKS[form]} (opset {opset})")
    if form in DYNAMO_OPSETS:
        from importlib.metadata import version
        return (f"{base}, onnxscript {version('onnxscript')}: torch.onnx.export(dynamo=True, "
                f"opset {DYNAMO_OPSETS[form]})")
    return f"{base} torch.onnx.export (TorchScript, opset {OPSET})"


def rel(p):
    return str(Path(p).relative_to(HERE))


def build_arch(arch, seed, forms):
    outdir = HERE / arch
    outdir.mkdir(exist_ok=True)
    cases = list(rd.PROMPTS)
    entries = []
    for form, (attn, cached, with_pos) in FORMS.items():
        if form not in forms:
            continue
        if FORM_ARCHS.get(form) is not None and arch not in FORM_ARCHS[form]:
            continue
        extra = GENAI_CONFIG.get(arch) if form in GENAI_FORMS else None
        try:
            try:
                model = build_model(arch, attn, seed, extra)
            except ValueError:
                if form not in OPTIMUM_TASKS and form not in DYNAMO_OPSETS:
                    raise
                # Optimum loads the folder with transformers' default, eager where no SDPA; a
                # dynamo export takes the model with the attention it has.
                attn = "eager"
                model = build_model(arch, attn, seed)
        except ValueError as e:  # e.g. GPT-J has no SDPA attention in transformers
            print(f"  {arch}/{form}: not built: {str(e).splitlines()[0][:120]}", flush=True)
            NOT_BUILT[f"{arch}/{form}"] = str(e).split(". ")[0]
            continue
        path = outdir / f"{form}.onnx"
        exported = export(model, form, path)
        if form in GUARDED_FORMS:
            add_nan_guard(path)
        if form not in GENAI_FORMS:  # onnx.checker does not know com.microsoft
            onnx.checker.check_model(str(path), full_check=True)
        m = onnx.load(str(path))
        # ONNX Runtime's buffer reuse fails on the builder's f16 CPU graphs (see ort_runner).
        mem_reuse = form not in HALF_FORMS
        run, io_ = rd.ort_runner(path, mem_reuse=mem_reuse)
        form_cases = cases
        dim_values = {}
        notes = []
        if form in GENAI_FORMS:
            # The builder names the cache's head dim; an empty past needs its value.
            dim_values = {"kv_cache_dim": exported["head_size"]}
            io_.dim_values = dim_values
        if "com.microsoft::GroupQueryAttention" in op_summary(m):
            # GroupQueryAttention reads seqlens_k and assumes right padding: a left-padded batch
            # is not what it computes (as models/zoo's fused_ms).
            form_cases = [c for c in cases if c != "batch2"]
            notes.append("batch2: not run: GroupQueryAttention assumes right padding "
                         "(seqlens_k), the protocol pads on the left")
        res = run_cases(run, io_, form_cases)
        # torch 2.6's TorchScript export of SDPA has no guard for fully masked rows: with left
        # padding, a pad query row's softmax is NaN, which reaches real rows through the next
        # layer's cached keys/values (0 * NaN). ONNX Runtime then returns NaN logits; such cases
        # are left out of the reference and named in the manifest.
        notes += [f"{c}: ONNX Runtime returns NaN logits (left padding, unguarded SDPA export)"
                  for c in form_cases if not all(np.isfinite(res[c][k][res[c]["attention_mask"].astype(bool)]).all()
                                           if k == "prefill_logits" else np.isfinite(res[c][k]).all()
                                           for k in ("prefill_logits", "step_logits"))]
        res = {c: r for c, r in res.items() if not any(n.startswith(c + ":") for n in notes)}
        if with_pos is None:
            with_pos = "position_ids" in io_.inputs
        trun, _ = torch_runner(model, form, with_pos)
        if form in HALF_FORMS:
            # An f16 graph's near-ties (top-2 margins of a few f16 ulps) may go either way;
            # teacher forcing compares the two models rather than where a tie took each.
            tio = torch_io(model, form, with_pos)
            tres = {c: rd.generate(trun, tio, rd.PROMPTS[c], forced_tokens=res[c]["tokens"])
                    for c in res}
        else:
            tres = run_cases(trun, torch_io(model, form, with_pos), list(res))
        ref = outdir / f"{form}.ref.npz"
        save_refs(ref, res)
        tok_eq = all((res[c]["tokens"] == tres[c]["tokens"]).all() for c in res)
        diff = max_diff(res, tres)
        ins, outs = graph_io(m)
        name = f"{arch}/{form}"
        entry = {
            "name": name,
            "architecture": arch,
            "model_type": model.config.model_type,
            "model_class": type(model).__name__,
            "form": form,
            "form_description": FORM_DOC[form],
            "attn_implementation": attn,
            "file": rel(path),
            "bytes": os.path.getsize(path),
            "sha256_16": sha256([path]),
            "opset_imports": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
            "ops": op_summary(m),
            "config": {**CONFIGS[arch][1], **(extra or {})},
            "inputs": ins,
            "outputs": outs,
            "cached": cached,
            "has_position_ids": with_pos,
            "reference": rel(ref),
            "reference_bytes": os.path.getsize(ref),
            "new_tokens": rd.N_NEW,
            "seed": seed,
            "producer": producer(form, m),
            "ort_vs_torch": {"max_abs_diff_logits": diff, "tokens_equal": bool(tok_eq)},
            "cases": cases_summary(res),
            "folio": SUPPORT.get(name, "untried"),
        }
        if dim_values:
            entry["dim_values"] = dim_values
        if not mem_reuse:
            entry["reference_mem_reuse"] = False
        if form in HALF_FORMS:
            entry["logits_rel_tol"] = HALF_REL_TOL
            entry["ort_vs_torch"]["teacher_forced"] = True
        if notes:
            entry["notes"] = notes
        entries.append(entry)
        print(f"  {name}: {entry['bytes']} B, ORT vs torch {diff:.2e}, tokens equal {tok_eq}",
              flush=True)
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="architectures to rebuild (others' manifest entries are kept)")
    ap.add_argument("--forms", nargs="*", choices=list(FORMS),
                    help="forms to rebuild (other fixtures' manifest entries are kept)")
    ap.add_argument("--search-seeds", action="store_true", help="search seeds and exit")
    args = ap.parse_args()
    archs = args.only or list(CONFIGS)
    if args.search_seeds:
        search_seeds(archs)
        return
    manifest_path = HERE / "manifest.json"
    entries = []
    forms = args.forms or list(FORMS)
    if manifest_path.exists():
        old = json.loads(manifest_path.read_text())

        def kept(name):
            arch, form = name.split("/")
            # quantize.py's fixtures (forms not made here) are kept; re-run it after rebuilding
            # their source forms.
            if form not in FORMS:
                return True
            return (args.only or args.forms) and (arch not in archs or form not in forms)

        entries = [e for e in old["models"] if kept(e["name"])]
        NOT_BUILT.update({n: why for n, why in old.get("not_built", {}).items() if kept(n)})
    for arch in archs:
        print(f"{arch} (seed {SEEDS.get(arch, 0)})", flush=True)
        try:
            entries.extend(build_arch(arch, SEEDS.get(arch, 0), forms))
        except Exception as e:  # noqa: BLE001  (an architecture transformers cannot export)
            print(f"  {arch}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    order = {a: i for i, a in enumerate(CONFIGS)}
    # Stable: quantize.py's forms follow an architecture's own, in their previous order.
    entries.sort(key=lambda e: (order[e["architecture"]],
                                list(FORMS).index(e["form"]) if e["form"] in FORMS else len(FORMS)))
    for e in entries:
        if e["form"] in FORMS:
            e["folio"] = SUPPORT.get(e["name"], "untried")
    total = sum(e["bytes"] + e["reference_bytes"] for e in entries)
    # The dynamo forms come from a venv of their own (requirements-dynamo.txt): each venv's
    # versions are recorded when it builds its forms, and kept otherwise.
    from importlib.metadata import version
    base = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
            "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__}
    versions = old.get("versions", {}) if manifest_path.exists() else {}
    dynamo_versions = old.get("dynamo_versions", {}) if manifest_path.exists() else {}
    if any(f not in DYNAMO_OPSETS for f in forms):
        versions = {**base, **optimum_versions(), **genai_versions()}
    if any(f in DYNAMO_OPSETS for f in forms):
        dynamo_versions = {**base, "onnxscript": version("onnxscript")}
    manifest = {
        "description": "Folio Hugging Face zoo: tiny random-weight XForCausalLM models from transformers' "
                       "own modeling code, exported to ONNX, with ONNX Runtime greedy-generation references "
                       "in the protocol of models/zoo. See models/README.md.",
        "generator": "models/zoo-hf/build.py",
        "versions": versions,
        "dynamo_versions": dynamo_versions,
        "protocol": "as models/zoo/manifest.json 'protocol' (models/zoo/refdriver.py)",
        "total_bytes": total,
        "not_built": dict(sorted(NOT_BUILT.items())),
        "models": entries,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(entries)} fixtures, {total} bytes in total (onnx + references)")


if __name__ == "__main__":
    main()
