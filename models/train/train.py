"""Trains Folio's bundled models on the CPU: a byte-level BPE tokenizer, a Llama-architecture
target (~6.5M parameters) and a draft about ten times smaller with the same tokenizer, on the
Python standard library sources (corpus.py), then exports both to ONNX in the zoo's cached form.

    .venv/bin/python models/train/train.py            # writes models/bundled/

Everything is seeded and single-threaded (torch, ONNX Runtime, the tokenizer trainer), and the
step counts are fixed, so a rerun on the same machine and Python version repeats the run.
Writes tokenizer.json, target.onnx, draft.onnx, heldout_slice.i32 and bundled.json (configs,
data, perplexities, ORT-vs-torch differences, samples, sizes, hashes). The committed draft is not
this one: distill.py, run afterwards, replaces it by a draft distilled from the target.

    .venv/bin/python models/train/train.py --tied --out DIR

trains only the target with its lm_head tied to the embedding table (the same shape, data and
steps), for measuring what quantizing a tied table costs (folio-bench --mode=weight-quant); it
is not committed.
"""
import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers' trainer: one thread, repeatable

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "zoo"))
import corpus  # noqa: E402
import refdriver  # noqa: E402
import sample  # noqa: E402
from archs import LlamaForCausalLM  # noqa: E402
from export_torch import export, torch_runner  # noqa: E402

EOT = "<|endoftext|>"
VOCAB = 4096
SEQ = 256  # training and evaluation window
SLICE_WINDOWS = 16  # committed held-out windows (heldout_slice.i32) for runtime-side checks


def llama_cfg(hidden, layers, heads, kv_heads, intermediate):
    # The keys archs.LlamaForCausalLM and export_torch read; rotary/norm fields as in the zoo's
    # manifest so consumers can tell the architecture without loading the graph.
    return dict(arch="llama", vocab=VOCAB, hidden=hidden, layers=layers, heads=heads,
                kv_heads=kv_heads, head_dim=hidden // heads, intermediate=intermediate, eps=1e-5,
                rope_base=10000.0, rotary="half_split", rotary_dim=hidden // heads,
                attn_impl="sdpa", tie=False, norm="rms", activation="silu_gated",
                max_positions=SEQ)


# Both models see the same batches (same seed, same step count), so the draft differs from the
# target only in size. At this compute budget the target is far from converged: given twice the
# steps, the 10x smaller draft overtakes it (a first run: draft 800 steps, held-out perplexity
# 60.8, against the target's 67.8 after 420), which would make a useless pair.
STEPS = 460
MODELS = {
    # name: (config, steps, peak lr)
    "target": (llama_cfg(256, 6, 8, 4, 688), STEPS, 2e-3),
    "draft": (llama_cfg(64, 2, 4, 2, 172), STEPS, 3e-3),
}
BATCH = 16
WARMUP = 30
SEED = 1234


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------------------------
# tokenizer and data


def train_tokenizer(train_docs):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator((text for _, text in train_docs), trainer)
    return tok


def token_stream(tok, docs):
    """All documents, each followed by <|endoftext|>, as one int64 array."""
    eot = tok.token_to_id(EOT)
    ids = []
    for enc in tok.encode_batch([text for _, text in docs]):
        ids.extend(enc.ids)
        ids.append(eot)
    return np.asarray(ids, dtype=np.int64)


def eval_windows(stream):
    """Non-overlapping SEQ-token windows of the held-out stream (the tail that does not fill a
    window is dropped); each window is scored from position 0 on its SEQ-1 next tokens."""
    n = len(stream) // SEQ
    return stream[: n * SEQ].reshape(n, SEQ)


# --------------------------------------------------------------------------------------------
# model


def init_weights(model, layers):
    g = torch.Generator().manual_seed(SEED)
    for name, p in sorted(model.named_parameters(), key=lambda x: x[0]):
        with torch.no_grad():
            if p.dim() == 1:  # RMSNorm weights
                p.fill_(1.0)
                continue
            std = 0.02
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                std = 0.02 / math.sqrt(2 * layers)  # GPT-2's residual-branch scaling
            p.copy_(torch.randn(p.shape, generator=g) * std)


def build(cfg):
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(cfg)
    init_weights(model, cfg["layers"])
    return model


def forward_loss(model, windows, reduction="mean"):
    b, t = windows.shape
    x = windows[:, :-1]
    mask = torch.ones(b, t - 1, dtype=torch.int64)
    pos = torch.arange(t - 1, dtype=torch.int64)[None].expand(b, t - 1)
    logits, _ = model(x, mask, pos, None)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1),
                           reduction=reduction)


def lr_at(step, steps, peak):
    if step < WARMUP:
        return peak * (step + 1) / WARMUP
    frac = (step - WARMUP) / max(1, steps - WARMUP)
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * frac)))


def train_model(name, cfg, steps, peak_lr, train_ids):
    model = build(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"{name}: {n_params} parameters, {steps} steps of {BATCH}x{SEQ} tokens")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=peak_lr, betas=(0.9, 0.95), eps=1e-8)
    data = torch.from_numpy(train_ids)
    g = torch.Generator().manual_seed(SEED + 1)
    model.train()
    t0 = time.time()
    losses = []
    for step in range(steps):
        starts = torch.randint(0, len(data) - SEQ - 1, (BATCH,), generator=g)
        batch = torch.stack([data[s: s + SEQ] for s in starts.tolist()])
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, peak_lr)
        loss = forward_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 25 == 0 or step == steps - 1:
            el = time.time() - t0
            log(f"{name} step {step:4d} loss {np.mean(losses[-25:]):.3f} "
                f"lr {lr_at(step, steps, peak_lr):.2e} {BATCH * SEQ * (step + 1) / el:.0f} tok/s")
    model.eval()
    return model, {"parameters": n_params, "steps": steps, "batch": BATCH, "seq": SEQ,
                   "peak_lr": peak_lr, "warmup": WARMUP, "schedule": "linear warmup, cosine to 10%",
                   "optimizer": "AdamW(betas=(0.9, 0.95), weight_decay=0.1 on matrices), clip 1.0",
                   "train_tokens_seen": steps * BATCH * SEQ,
                   "final_train_loss": float(np.mean(losses[-25:])),
                   "train_seconds": round(time.time() - t0, 1)}


@torch.no_grad()
def perplexity(model, windows):
    total, count = 0.0, 0
    for i in range(0, len(windows), BATCH):
        w = torch.from_numpy(windows[i: i + BATCH])
        total += forward_loss(model, w, reduction="sum").item()
        count += w.shape[0] * (w.shape[1] - 1)
    return math.exp(total / count), count


# --------------------------------------------------------------------------------------------
# export and checks


def ort_vs_torch(model, onnx_path, tok, n_new):
    """Greedy generation from the sample prompts through ONNX Runtime and through the torch model
    (teacher-forced with ORT's tokens); the max abs logit difference over prefill and steps."""
    run, io = refdriver.ort_runner(onnx_path)
    texts, res = sample.generate_text(run, io, tok, sample.PROMPTS, n_new)
    t_run = torch_runner(model, "cached")
    ids = [tok.encode(p).ids for p in sample.PROMPTS]
    ref = refdriver.generate(t_run, io, ids, n_new=n_new, forced_tokens=res["tokens"])
    mask = res["attention_mask"].astype(bool)
    diff = max(float(np.max(np.abs(res["prefill_logits"][mask] - ref["prefill_logits"][mask]))),
               float(np.max(np.abs(res["step_logits"] - ref["step_logits"]))))
    same = bool(np.array_equal(res["tokens"], ref["tokens"]))
    return texts, diff, same


def sha256_file(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def public_cfg(cfg):
    return {k: v for k, v in cfg.items() if k != "cls"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE.parent / "bundled")
    ap.add_argument("--steps-scale", type=float, default=1.0,
                    help="multiply every step count (a quick smoke run: 0.02)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tied", action="store_true",
                    help="train only the target, its lm_head tied to the embedding table")
    args = ap.parse_args()
    models = MODELS
    if args.tied:
        cfg, steps, lr = MODELS["target"]
        models = {"target": (dict(cfg, tie=True), steps, lr)}
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.time()

    train_docs, held_docs, data_info = corpus.load_split()
    log(f"corpus: {data_info['train_files']} train / {data_info['heldout_files']} held-out files")
    tok = train_tokenizer(train_docs)
    tok_path = args.out / "tokenizer.json"
    tok.save(str(tok_path))
    train_ids = token_stream(tok, train_docs)
    held_ids = token_stream(tok, held_docs)
    windows = eval_windows(held_ids)
    windows[:SLICE_WINDOWS].astype("<i4").tofile(args.out / "heldout_slice.i32")
    data_info.update(train_tokens=int(len(train_ids)), heldout_tokens=int(len(held_ids)),
                     heldout_windows=int(len(windows)))
    log(f"tokens: {len(train_ids)} train, {len(held_ids)} held-out ({len(windows)} windows)")

    report = {"data": data_info, "models": {}}
    for name, (cfg, steps, lr) in models.items():
        steps = max(WARMUP + 1, int(steps * args.steps_scale))
        model, info = train_model(name, cfg, steps, lr, train_ids)
        ppl, n_tok = perplexity(model, windows)
        ppl_slice, _ = perplexity(model, windows[:SLICE_WINDOWS])
        log(f"{name}: held-out perplexity {ppl:.3f} over {n_tok} tokens "
            f"(slice of {SLICE_WINDOWS} windows: {ppl_slice:.3f})")
        path = args.out / f"{name}.onnx"
        export(model, "cached", path)
        texts, diff, same = ort_vs_torch(model, path, tok, 32)
        log(f"{name}: ORT vs torch max abs logit diff {diff:.2e}, greedy tokens equal: {same}")
        for p, t in zip(sample.PROMPTS, texts):
            print(f"--- {name} | {p!r}\n{p}{t}\n", flush=True)
        report["models"][name] = {
            "file": path.name, "config": public_cfg(cfg), **info,
            "heldout_perplexity": round(ppl, 4), "heldout_tokens_scored": n_tok,
            "slice_perplexity": round(ppl_slice, 4),
            "ort_vs_torch_max_abs_logit_diff": diff, "ort_greedy_equals_torch": same,
            "samples": [{"prompt": p, "greedy_32": t} for p, t in zip(sample.PROMPTS, texts)],
        }

    files = ["tokenizer.json", "heldout_slice.i32"] + [f"{name}.onnx" for name in models]
    report.update({
        "evaluation": {
            "perplexity": "exp(mean next-token NLL), fp32, over every non-overlapping "
                          f"{SEQ}-token window of the held-out token stream (documents joined with "
                          f"{EOT} after each); each window starts at position 0 with an empty past "
                          f"and scores its {SEQ - 1} next tokens",
            "slice": f"heldout_slice.i32: the first {SLICE_WINDOWS} windows, int32 little-endian "
                     f"[{SLICE_WINDOWS}, {SEQ}]; slice_perplexity is the same measure on them",
        },
        "tokenizer": {"file": "tokenizer.json", "vocab": tok.get_vocab_size(),
                      "special_tokens": {EOT: tok.token_to_id(EOT)},
                      "type": "byte-level BPE (GPT-2 pre-tokenizer regex, no prefix space)"},
        "onnx": {"form": "cached (models/README.md): input_ids, attention_mask, position_ids, "
                         "past_key_values.N.key|value -> logits, present.N.key|value",
                 "exporter": f"torch {torch.__version__} TorchScript, opset 17, float32"},
        "seeds": {"init": SEED, "batches": SEED + 1},
        "versions": {"torch": torch.__version__, "tokenizers": __import__("tokenizers").__version__,
                     "onnxruntime": __import__("onnxruntime").__version__, "numpy": np.__version__,
                     "python": data_info["python"]},
        "threads": args.threads,
        "total_seconds": round(time.time() - t_start, 1),
        "files": {f: {"bytes": (args.out / f).stat().st_size, "sha256": sha256_file(args.out / f)}
                  for f in files},
    })
    report["total_bytes"] = sum(v["bytes"] for v in report["files"].values())
    with open(args.out / "bundled.json", "w") as fh:
        json.dump(report, fh, indent=1, sort_keys=False)
        fh.write("\n")
    log(f"done in {report['total_seconds']:.0f} s; {report['total_bytes']} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
