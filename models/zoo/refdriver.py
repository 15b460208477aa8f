"""Greedy-generation driver shared by build_all.py (to write references) and check_fixtures.py
(to replay them). Needs only numpy; the model is any callable feeds(dict name->ndarray) ->
dict name->ndarray, e.g. an onnxruntime session or a torch wrapper.

Protocol (Hugging Face / Optimum conventions):
  * prompts of a batch are LEFT-padded with token 0 and attention_mask 0;
  * position_ids (when the graph has that input) = cumsum(attention_mask) - 1, padded slots 1,
    last `seq` columns -- the same formula the graphs without that input compute inside;
  * cached graphs: step 0 feeds the whole prompt with empty past (past length 0), every later
    step feeds the one new token per sequence, attention_mask grown by one column of ones,
    and the previous step's present.* as past_key_values.*;
  * no-cache graphs: every step recomputes the whole sequence (prompt + generated so far);
  * greedy: next token = argmax of the last row's logits (first index on ties).
Returned arrays: tokens [B,N], step_logits [B,N,V] (row of the last position at each step;
step 0 is the prefill), prefill_logits [B,L,V] (all prompt rows; rows of pad slots are
meaningless and should be ignored using attention_mask).
"""
import numpy as np

N_NEW = 16

# prompt cases: 1 token, 5 tokens, 11 tokens (longer than the window-8 sliding-window models),
# 16 tokens (a multiple of 16), and a left-padded batch of the 5- and 11-token prompts.
_rng = np.random.default_rng(20240611)
_BASE = _rng.integers(1, 256, size=32).tolist()
PROMPTS = {
    "p1": [[_BASE[0]]],
    "p5": [_BASE[1:6]],
    "p11": [_BASE[6:17]],
    "p16": [_BASE[16:32]],
    "batch2": [_BASE[1:6], _BASE[6:17]],
}


def pad_left(prompts):
    L = max(len(p) for p in prompts)
    ids = np.zeros((len(prompts), L), dtype=np.int64)
    mask = np.zeros((len(prompts), L), dtype=np.int64)
    for b, p in enumerate(prompts):
        ids[b, L - len(p):] = p
        mask[b, L - len(p):] = 1
    return ids, mask


def positions_from_mask(mask, seq):
    pos = np.cumsum(mask, axis=-1) - 1
    pos = np.where(mask == 0, 1, pos)
    return pos[:, -seq:].astype(np.int64)


class GraphIO:
    """What a graph wants, read from its input/output descriptions."""

    def __init__(self, inputs, outputs):
        # inputs/outputs: list of (name, shape list with ints or strings)
        self.inputs = dict(inputs)
        self.outputs = [n for n, _ in outputs]
        self.has_mask = "attention_mask" in self.inputs
        self.has_pos = "position_ids" in self.inputs
        self.past = sorted(n for n in self.inputs if n.startswith("past_key_values."))
        self.cached = bool(self.past)
        # Values of named dims the graph does not fix (ONNX Runtime GenAI's past head dim,
        # kv_cache_dim), for the empty past.
        self.dim_values = {}
        # The past's element type (float16 for a graph exported in f16).
        self.past_dtype = np.float32

    def empty_past(self, batch):
        feeds = {}
        for n in self.past:
            shp = self.inputs[n]
            kv, d = (self.dim_values.get(x, x) for x in (shp[1], shp[3]))
            assert isinstance(kv, int) and isinstance(d, int), (n, shp)
            feeds[n] = np.zeros((batch, kv, 0, d), dtype=self.past_dtype)
        return feeds


def _present_name(past_name):
    # past_key_values.{i}.key -> present.{i}.key
    return "present." + past_name[len("past_key_values."):]


def generate(run, io, prompts, n_new=N_NEW, forced_tokens=None):
    """Greedy generation. With forced_tokens [B,N] (teacher forcing) those tokens are fed instead
    of the argmax, so a replay is not thrown off by a near-tie; the argmax is still returned."""
    ids, mask = pad_left(prompts)
    B, L = ids.shape
    tokens = np.zeros((B, n_new), dtype=np.int64)
    step_logits = []
    prefill = None
    past = io.empty_past(B) if io.cached else None
    seq_ids, seq_mask = ids, mask
    cur_ids = ids
    for t in range(n_new):
        feeds = {}
        if io.cached:
            feeds["input_ids"] = cur_ids
            s = cur_ids.shape[1]
            feeds.update(past)
        else:
            feeds["input_ids"] = seq_ids
            s = seq_ids.shape[1]
        if io.has_mask:
            feeds["attention_mask"] = seq_mask
        if io.has_pos:
            feeds["position_ids"] = positions_from_mask(seq_mask, s)
        out = run(feeds)
        logits = np.asarray(out["logits"], dtype=np.float32)
        if t == 0:
            prefill = logits[:, -L:, :].copy() if io.cached else logits.copy()
        last = logits[:, -1, :]
        step_logits.append(last.copy())
        nxt = np.argmax(last, axis=-1)
        tokens[:, t] = nxt
        feed_tok = nxt if forced_tokens is None else forced_tokens[:, t]
        if io.cached:
            past = {n: out[_present_name(n)] for n in io.past}
            cur_ids = feed_tok[:, None].astype(np.int64)
        seq_ids = np.concatenate([seq_ids, feed_tok[:, None].astype(np.int64)], axis=1)
        seq_mask = np.concatenate([seq_mask, np.ones((B, 1), dtype=np.int64)], axis=1)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "tokens": tokens,
        "prefill_logits": prefill,
        "step_logits": np.stack(step_logits, axis=1),
    }


def top2_margin(step_logits):
    s = np.sort(step_logits, axis=-1)
    return float(np.min(s[..., -1] - s[..., -2]))


def ort_runner(path, intra_threads=1, session_config=None, graph_optimization_level=None,
               mem_reuse=True):
    """session_config: session config entries (name -> value string), e.g. a fixture manifest's
    reference_session_config. graph_optimization_level: the name of an
    onnxruntime.GraphOptimizationLevel (e.g. "ORT_DISABLE_ALL", a manifest's
    reference_graph_optimization_level); None keeps ONNX Runtime's default (ORT_ENABLE_ALL).
    mem_reuse=False (a manifest's reference_mem_reuse) turns off ONNX Runtime's buffer reuse,
    which fails on f16 graphs whose ops it runs in f32 through inserted Casts ("Shape mismatch
    attempting to re-use buffer"); it changes no result."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.enable_mem_reuse = mem_reuse
    so.intra_op_num_threads = intra_threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if graph_optimization_level is not None:
        levels = ort.GraphOptimizationLevel.__members__
        if graph_optimization_level not in levels:
            raise ValueError(f"graph_optimization_level {graph_optimization_level!r}: not one of "
                             f"{', '.join(levels)}")
        so.graph_optimization_level = levels[graph_optimization_level]
    for k, v in (session_config or {}).items():
        so.add_session_config_entry(k, v)
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def shape_of(a):
        return [d if isinstance(d, int) else str(d) for d in a.shape]

    io = GraphIO([(i.name, shape_of(i)) for i in sess.get_inputs()],
                 [(o.name, shape_of(o)) for o in sess.get_outputs()])
    if any(i.type == "tensor(float16)" for i in sess.get_inputs() if i.name in io.past):
        io.past_dtype = np.float16
    names = [o.name for o in sess.get_outputs()]

    def run(feeds):
        res = sess.run(names, feeds)
        return dict(zip(names, res))

    return run, io
