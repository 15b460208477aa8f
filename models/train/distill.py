"""Distils Folio's bundled draft from the bundled target: a new draft is trained to match the
target's next-token distribution on the training split, so that speculative decoding keeps more
of its drafts (docs/speculative-decoding.md).

    .venv/bin/python models/train/distill.py          # rewrites models/bundled/draft.onnx

Loss: forward KL(target || draft) on the full 4096-token distributions at temperature 1, computed
from the target's logits on the same batch (the teacher runs in the loop; nothing is cached).
Forward KL is the usual objective for speculative-decoding drafts (DistillSpec, Zhou et al. 2023):
its minimum is draft == target, which maximises both the greedy acceptance (the two argmaxes
agree) and the sampled one (1 - total variation). Temperature 1 because that is the distribution
being verified: a softened target would spend the draft's little capacity on the tail at the
expense of the order of the top tokens, which is what greedy verification checks. No data
cross-entropy by default (--ce-weight): the target's argmax is the data's next token only 28 % of
the time on held-out text, and every step toward the data where they differ is a step away from
the target.

Starts from train.py's draft (same shape, seeded initialisation, 460 cross-entropy steps, rerun
here), then distils for a fixed number of steps. Reuses train.py (corpus, token streams, the Llama
configuration and architecture, initialisation, cross-entropy training, learning-rate schedule,
perplexity, ONNX export and the ORT-vs-torch check) and the committed tokenizer.json and
target.onnx (whose weights are read back into the torch model). Seeded,
single-threaded and with fixed step counts like train.py. Rewrites draft.onnx and the draft's
entries of bundled.json (models.draft, files, total_bytes, a 'distill' section); the target,
the tokenizer and the held-out slice are inputs and stay as they are.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import train  # noqa: E402  (puts models/zoo on sys.path too)
import corpus  # noqa: E402
import sample  # noqa: E402

SEQ = train.SEQ
BATCH = train.BATCH
# The draft keeps train.py's shape (hidden 64, 2 layers, 615K parameters, a tenth of the target).
# A wider one distils to a closer copy but costs more per proposal than it gains: in a 200-step
# trial, hidden 112 (1.25M parameters) reached a greedy acceptance of 0.81 at k = 1 against
# 0.84-0.88 for this shape started from its cross-entropy training (0.48 from scratch), while its
# decode step took 0.20 ms against 0.11 ms on one core next to the target's 1.26 ms verifying step.
DRAFT, CE_STEPS, CE_LR = train.MODELS["draft"]
# KL phase, sized for about 60 minutes on one shared core (1.4 s a step on an idle core, 2.1-2.4 s
# beside other builds: the target's forward and the draft's forward and backward on 16 x 256
# tokens).
STEPS = 1500
PEAK_LR = 3e-3  # trials at 200 steps: 1e-3, 2e-3, 3e-3 gave held-out KL 0.221, 0.174, 0.155
TEMPERATURE = 1.0
BATCH_SEED = train.SEED + 2  # fresh windows: the cross-entropy phase drew with SEED + 1
# Spec-decoding estimate: greedy target continuations of held-out prompts, as folio-bench's
# 'heldout' workload builds them (a window's first 64 tokens, 128 new tokens).
ACCEPT_PROMPTS, ACCEPT_PROMPT_TOKENS, ACCEPT_NEW = 64, 64, 128
ACCEPT_K = (1, 2, 4)

log = train.log


# --------------------------------------------------------------------------------------------
# reading the committed models back into torch


def load_onnx(cfg, path):
    """A LlamaForCausalLM with the weights of a graph train.py exported: named initializers are
    the state-dict entries (prefix 'model.'); the TorchScript exporter stores each Linear's
    weight transposed under an anonymous name, found through its MatMul node's scope
    ('/model/layers.0/self_attn/q_proj/MatMul')."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    state = {k.removeprefix("model."): v for k, v in inits.items() if k.startswith("model.")}
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        for name in node.input:
            if name in inits and not name.startswith("model."):
                scope = node.name.removeprefix("/model/").removesuffix("/MatMul")
                state[scope.replace("/", ".") + ".weight"] = inits[name].T
    model = train.LlamaForCausalLM(cfg)
    want = model.state_dict()
    missing, extra = sorted(set(want) - set(state)), sorted(set(state) - set(want))
    bad = [k for k in want if k in state and tuple(state[k].shape) != tuple(want[k].shape)]
    if missing or extra or bad:
        raise SystemExit(f"{path}: weights do not fit the configuration {train.public_cfg(cfg)}: "
                         f"missing {missing}, unexpected {extra}, wrong shape {bad}; expected a "
                         "graph exported by models/train/train.py or distill.py")
    model.load_state_dict({k: torch.from_numpy(np.array(v, dtype=np.float32))
                           for k, v in state.items()})
    return model.eval()


def recorded_cfg(meta, name):
    """The configuration bundled.json records, with the keys train.llama_cfg writes."""
    cfg = dict(meta["models"][name]["config"])
    fresh = train.llama_cfg(cfg["hidden"], cfg["layers"], cfg["heads"], cfg["kv_heads"],
                            cfg["intermediate"])
    if cfg != fresh:
        raise SystemExit(f"bundled.json: the {name} configuration {cfg} is not one train.llama_cfg "
                         f"writes ({fresh}); distill.py reads train.py's Llama models only")
    return fresh


# --------------------------------------------------------------------------------------------
# loss and training


def logits_of(model, windows):
    b, t = windows.shape
    mask = torch.ones(b, t - 1, dtype=torch.int64)
    pos = torch.arange(t - 1, dtype=torch.int64)[None].expand(b, t - 1)
    logits, _ = model(windows[:, :-1], mask, pos, None)
    return logits


def kl_loss(teacher_logits, student_logits, temperature):
    """Mean over positions of KL(teacher || student) on the softened distributions, times T^2 so
    that gradients keep their scale across temperatures (Hinton et al. 2015)."""
    v = teacher_logits.shape[-1]
    t = F.log_softmax(teacher_logits.reshape(-1, v) / temperature, dim=-1)
    s = F.log_softmax(student_logits.reshape(-1, v) / temperature, dim=-1)
    return F.kl_div(s, t, log_target=True, reduction="batchmean") * temperature ** 2


def distill(draft, teacher, train_ids, steps, peak_lr, temperature, ce_weight):
    n_params = sum(p.numel() for p in draft.parameters())
    log(f"draft: distilling, {steps} steps of {BATCH}x{SEQ} tokens")
    decay = [p for p in draft.parameters() if p.dim() >= 2]
    no_decay = [p for p in draft.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=peak_lr, betas=(0.9, 0.95), eps=1e-8)
    data = torch.from_numpy(train_ids)
    g = torch.Generator().manual_seed(BATCH_SEED)
    draft.train()
    t0 = time.time()
    kls, ces = [], []
    for step in range(steps):
        starts = torch.randint(0, len(data) - SEQ - 1, (BATCH,), generator=g)
        batch = torch.stack([data[s: s + SEQ] for s in starts.tolist()])
        for group in opt.param_groups:
            group["lr"] = train.lr_at(step, steps, peak_lr)
        with torch.no_grad():
            t_logits = logits_of(teacher, batch)
        s_logits = logits_of(draft, batch)
        kl = kl_loss(t_logits, s_logits, temperature)
        ce = F.cross_entropy(s_logits.reshape(-1, s_logits.shape[-1]), batch[:, 1:].reshape(-1))
        loss = kl + ce_weight * ce if ce_weight else kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        kls.append(kl.item())
        ces.append(ce.item())
        if step % 25 == 0 or step == steps - 1:
            el = time.time() - t0
            log(f"draft step {step:4d} kl {np.mean(kls[-25:]):.4f} ce {np.mean(ces[-25:]):.3f} "
                f"lr {train.lr_at(step, steps, peak_lr):.2e} "
                f"{BATCH * SEQ * (step + 1) / el:.0f} tok/s")
    draft.eval()
    return {"parameters": n_params, "steps": steps, "batch": BATCH, "seq": SEQ,
            "peak_lr": peak_lr, "warmup": train.WARMUP, "schedule": "linear warmup, cosine to 10%",
            "optimizer": "AdamW(betas=(0.9, 0.95), weight_decay=0.1 on matrices), clip 1.0",
            "train_tokens_seen": steps * BATCH * SEQ,
            "final_train_kl": float(np.mean(kls[-25:])),
            "final_train_loss": float(np.mean(ces[-25:])),
            "train_seconds": round(time.time() - t0, 1)}


# --------------------------------------------------------------------------------------------
# evaluation against the target


@torch.no_grad()
def agreement(draft, teacher, windows):
    """Teacher-forced on held-out windows: KL(target || draft), how often the two argmaxes agree
    (greedy acceptance of a single draft) and sum(min(p, q)) = 1 - total variation (the
    acceptance of a single sampled draft at temperature 1), averaged over the scored tokens."""
    kl = agree = overlap = 0.0
    count = 0
    for i in range(0, len(windows), BATCH):
        w = torch.from_numpy(windows[i: i + BATCH])
        t, d = logits_of(teacher, w), logits_of(draft, w)
        lt, ld = F.log_softmax(t, -1), F.log_softmax(d, -1)
        kl += float((lt.exp() * (lt - ld)).sum().item())
        agree += float((t.argmax(-1) == d.argmax(-1)).sum().item())
        overlap += float(torch.minimum(lt.exp(), ld.exp()).sum().item())
        count += w.shape[0] * (w.shape[1] - 1)
    return {"kl": round(kl / count, 4), "top1_agreement": round(agree / count, 4),
            "one_minus_tv": round(overlap / count, 4), "tokens": count}


@torch.no_grad()
def greedy_continuations(teacher, prompts, n_new):
    """The target's greedy continuations (KV cache, no padding: equal-length prompts)."""
    b, s = prompts.shape
    ids = torch.from_numpy(prompts)
    logits, past = teacher(ids, torch.ones(b, s, dtype=torch.int64),
                           torch.arange(s)[None].expand(b, s), None)
    out = []
    for i in range(n_new):
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        out.append(nxt)
        logits, past = teacher(nxt, torch.ones(b, s + i + 1, dtype=torch.int64),
                               torch.full((b, 1), s + i, dtype=torch.int64), past)
    return torch.cat([ids, torch.cat(out, 1)], 1).numpy()


@torch.no_grad()
def greedy_acceptance(draft, sequences, prompt_len, ks):
    """Greedy speculative decoding replayed on the target's own greedy continuations: the draft's
    proposal at a position is its argmax given the target's tokens so far, and k drafts keep the
    run of leading agreements; a step then emits the kept drafts plus the target's token. Returns
    per k the acceptance rate (kept / proposed drafts) and the mean accepted length (tokens per
    step), as folio-bench --mode=spec reports them (without its adaptive k or length caps)."""
    d = logits_of(draft, torch.from_numpy(sequences))  # row j predicts token j + 1
    hit = (d.argmax(-1) == torch.from_numpy(sequences[:, 1:])).numpy()[:, prompt_len - 1:]
    out = {}
    for k in ks:
        kept = proposed = steps = 0
        for row in hit:
            t = 0
            while t < len(row):
                k_here = min(k, len(row) - t - 1)  # drafts past the last token are never made
                run = 0
                while run < k_here and row[t + run]:
                    run += 1
                kept, proposed, steps = kept + run, proposed + k_here, steps + 1
                t += run + 1
        out[str(k)] = {"acceptance_rate": round(kept / max(1, proposed), 4),
                       "mean_accepted_length": round((kept + steps) / steps, 4)}
    return out


def evaluate(name, draft, teacher, windows, sequences):
    ppl, n_tok = train.perplexity(draft, windows)
    ppl_slice, _ = train.perplexity(draft, windows[:train.SLICE_WINDOWS])
    res = {"heldout_perplexity": round(ppl, 4), "heldout_tokens_scored": n_tok,
           "slice_perplexity": round(ppl_slice, 4),
           "heldout_vs_target": agreement(draft, teacher, windows),
           "greedy_speculation": greedy_acceptance(draft, sequences, ACCEPT_PROMPT_TOKENS,
                                                   ACCEPT_K)}
    log(f"{name}: held-out perplexity {ppl:.3f} (slice {ppl_slice:.3f}), vs target "
        f"{res['heldout_vs_target']}, greedy speculation {res['greedy_speculation']}")
    return res


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=HERE.parent / "bundled",
                    help="the bundle: reads target.onnx, draft.onnx, tokenizer.json, bundled.json; "
                         "rewrites draft.onnx and bundled.json")
    ap.add_argument("--steps-scale", type=float, default=1.0,
                    help="multiply the step count (a quick smoke run: 0.02)")
    ap.add_argument("--ce-weight", type=float, default=0.0,
                    help="add this times the data's cross-entropy to the KL loss (default 0)")
    ap.add_argument("--temperature", type=float, default=TEMPERATURE,
                    help="soften both distributions in the KL loss (default 1: the plain ones)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.temperature <= 0 or args.ce_weight < 0 or args.steps_scale <= 0:
        ap.error("--temperature and --steps-scale must be positive and --ce-weight non-negative")
    torch.set_num_threads(args.threads)
    t_start = time.time()
    meta_path = args.dir / "bundled.json"
    meta = json.loads(meta_path.read_text())

    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(args.dir / "tokenizer.json"))
    train_docs, held_docs, data_info = corpus.load_split()
    if data_info["corpus_sha256"] != meta["data"]["corpus_sha256"]:
        raise SystemExit(f"corpus: sha256 {data_info['corpus_sha256']} differs from bundled.json's "
                         f"{meta['data']['corpus_sha256']} (Python {data_info['python']} here, "
                         f"{meta['data']['python']} there); distil with the training interpreter")
    train_ids = train.token_stream(tok, train_docs)
    windows = train.eval_windows(train.token_stream(tok, held_docs))
    if (len(train_ids) != meta["data"]["train_tokens"]
            or len(windows) != meta["data"]["heldout_windows"]):
        raise SystemExit(f"tokens: {len(train_ids)} training tokens and {len(windows)} held-out "
                         f"windows, bundled.json records {meta['data']['train_tokens']} and "
                         f"{meta['data']['heldout_windows']}: tokenizer.json does not match the "
                         "bundle")
    log(f"tokens: {len(train_ids)} train, {len(windows)} held-out windows")

    teacher = load_onnx(recorded_cfg(meta, "target"), args.dir / "target.onnx")
    for p in teacher.parameters():
        p.requires_grad_(False)
    ppl_slice, _ = train.perplexity(teacher, windows[:train.SLICE_WINDOWS])
    rec = meta["models"]["target"]["slice_perplexity"]
    if abs(ppl_slice - rec) / rec > 1e-4:
        raise SystemExit(f"target.onnx read back into torch: slice perplexity {ppl_slice:.4f}, "
                         f"bundled.json records {rec:.4f}")
    log(f"target: slice perplexity {ppl_slice:.4f} (recorded {rec:.4f})")

    prompts = windows[:ACCEPT_PROMPTS, :ACCEPT_PROMPT_TOKENS]
    sequences = greedy_continuations(teacher, prompts, ACCEPT_NEW)
    current = load_onnx(recorded_cfg(meta, "draft"), args.dir / "draft.onnx")
    before = evaluate("current draft", current, teacher, windows, sequences)
    before_sha = train.sha256_file(args.dir / "draft.onnx")

    # Start from train.py's draft recipe (seeded initialisation, 460 cross-entropy steps), rerun
    # here rather than read from draft.onnx so that a rerun does not distil its own output.
    # Cross-entropy steps cost a quarter of a distillation step (no teacher forward).
    ce_steps = max(train.WARMUP + 1, int(CE_STEPS * args.steps_scale))
    draft, ce_info = train.train_model("draft", DRAFT, ce_steps, CE_LR, train_ids)
    steps = max(train.WARMUP + 1, int(STEPS * args.steps_scale))
    info = distill(draft, teacher, train_ids, steps, PEAK_LR, args.temperature, args.ce_weight)
    after = evaluate("distilled draft", draft, teacher, windows, sequences)

    path = args.dir / "draft.onnx"
    train.export(draft, "cached", path)
    texts, diff, same = train.ort_vs_torch(draft, path, tok, 32)
    log(f"draft: ORT vs torch max abs logit diff {diff:.2e}, greedy tokens equal: {same}")
    for p, t in zip(sample.PROMPTS, texts):
        print(f"--- draft | {p!r}\n{p}{t}\n", flush=True)

    target_params = meta["models"]["target"]["parameters"]
    meta["models"]["draft"] = {
        "file": path.name, "config": train.public_cfg(DRAFT), **info,
        "heldout_perplexity": after["heldout_perplexity"],
        "heldout_tokens_scored": after["heldout_tokens_scored"],
        "slice_perplexity": after["slice_perplexity"],
        "ort_vs_torch_max_abs_logit_diff": diff, "ort_greedy_equals_torch": same,
        "samples": [{"prompt": p, "greedy_32": t} for p, t in zip(sample.PROMPTS, texts)],
    }
    meta["distill"] = {
        "script": "models/train/distill.py",
        "teacher": {"file": "target.onnx", "sha256": meta["files"]["target.onnx"]["sha256"]},
        "loss": f"forward KL(target || draft) over the full {train.VOCAB}-token next-token "
                f"distributions, temperature {args.temperature:g}, mean over positions"
                + (f", plus {args.ce_weight:g} x the data's cross-entropy"
                   if args.ce_weight else ""),
        "temperature": args.temperature,
        "ce_weight": args.ce_weight,
        "data": f"random {SEQ}-token windows of the training stream (batch seed {BATCH_SEED}); "
                "the target's logits computed on each batch",
        "init": {"recipe": "train.py's draft: seeded initialisation, then cross-entropy on the "
                           "data (run by distill.py, not read from the previous draft.onnx)",
                 "seeds": {"init": train.SEED, "batches": train.SEED + 1}, **ce_info},
        "parameter_ratio": round(target_params / info["parameters"], 2),
        "evaluation": {
            "heldout_vs_target": "teacher-forced on every held-out window: mean "
                                 "KL(target || draft), argmax agreement, 1 - total variation",
            "greedy_speculation": f"greedy speculative decoding replayed on the target's greedy "
                                  f"continuations ({ACCEPT_NEW} tokens) of the first "
                                  f"{ACCEPT_PROMPT_TOKENS} tokens of the first {ACCEPT_PROMPTS} "
                                  "held-out windows, per k",
        },
        "before": {"draft_sha256": before_sha, **before},
        "after": after,
        "versions": {"torch": torch.__version__, "tokenizers": __import__("tokenizers").__version__,
                     "onnxruntime": __import__("onnxruntime").__version__, "numpy": np.__version__,
                     "python": data_info["python"]},
        "threads": args.threads,
        "total_seconds": round(time.time() - t_start, 1),
    }
    meta["files"]["draft.onnx"] = {"bytes": path.stat().st_size, "sha256": train.sha256_file(path)}
    meta["total_bytes"] = sum(v["bytes"] for v in meta["files"].values())
    with open(meta_path, "w") as fh:
        json.dump(meta, fh, indent=1, sort_keys=False)
        fh.write("\n")
    log(f"done in {meta['distill']['total_seconds']:.0f} s; draft.onnx {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
