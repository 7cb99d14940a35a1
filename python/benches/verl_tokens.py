"""What the verl exporter's token store costs per training step, on one core.

A verl-agent-shaped batch of ROWS responses of LENGTH token positions (about 3/4 of them response tokens, the
rest padding), with every per-token channel verl has (advantages, old, reference and rollout log-probabilities,
entropies), is exported with ``RunExporter.write_step``; the token store's share (``TokenStoreWriter.write``)
is timed on its own as well. The tokenizer decodes from a 150,000-word vocabulary (a dict look-up: the
tokenizer's own cost is the user's); texts are cached per id after the first step, as in training.

    python3 python/benches/verl_tokens.py [ROWS LENGTH STEPS]      # default 256 2048 5

Goal (issue 24): at least a million tokens a second.
"""

import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gigscope import verl  # noqa: E402


class Vocabulary:
    def __init__(self, size):
        self.words = [f" w{i}" for i in range(size)]

    def __len__(self):
        return len(self.words)

    def decode(self, ids, skip_special_tokens=True):
        return "".join(self.words[int(i)] for i in ids)


class Batch:
    def __init__(self, batch, non_tensor_batch):
        self.batch = batch
        self.non_tensor_batch = non_tensor_batch


def make_batch(rows, length, rng, group=8):
    responses = rng.integers(0, 150_000, size=(rows, length), dtype=np.int64)
    lengths = rng.integers(length // 2, length + 1, size=rows)
    attention = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int64)
    f = lambda: rng.normal(size=(rows, length)).astype(np.float32)  # noqa: E731
    tensors = {
        "responses": responses,
        "attention_mask": attention,
        "response_mask": attention.copy(),
        "advantages": np.repeat(rng.normal(size=(rows, 1)).astype(np.float32), length, axis=1) * attention,
        "old_log_probs": f(),
        "ref_log_prob": f(),
        "rollout_log_probs": f(),
        "entropys": np.abs(f()),
    }
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    non_tensor = {
        "uid": obj([f"g{i // group}" for i in range(rows)]),
        "traj_uid": obj([f"t{i}" for i in range(rows)]),
        "raw_prompt": obj(["prompt"] * rows),
        "rewards": obj([0.0] * rows),
    }
    return Batch(tensors, non_tensor), int(attention.sum())


def main():
    rows, length, steps = (int(a) for a in (sys.argv[1:4] if len(sys.argv) >= 4 else (256, 2048, 5)))
    rng = np.random.default_rng(0)
    tokenizer = Vocabulary(150_000)
    with tempfile.TemporaryDirectory() as tmp:
        exporter = verl.RunExporter(os.path.join(tmp, "run"), tokenizer=tokenizer, log=open(os.devnull, "w"))
        # Warm the text cache over the whole vocabulary (a real run meets most ids in its first steps).
        exporter._tokens._token_texts(np.arange(150_000), [("warm", 0)], [150_000])
        whole, store, tokens = [], [], 0
        for step in range(1, steps + 1):
            batch, n = make_batch(rows, length, rng)
            tokens = n
            start = time.perf_counter()
            assert exporter.write_step(batch, step=step), exporter.last_error
            whole.append(time.perf_counter() - start)
            keep = batch.batch["attention_mask"].astype(bool)
            columns = [(name, batch.batch[key][keep], None) for key, name in verl.TOKEN_CHANNELS]
            start = time.perf_counter()
            exporter._tokens.write(
                f"bench-{step}.bin", step, [(f"t{i}", 0) for i in range(rows)], keep.sum(axis=1),
                batch.batch["responses"][keep], batch.batch["response_mask"][keep], columns,
            )
            store.append(time.perf_counter() - start)
        size = os.path.getsize(os.path.join(tmp, "run", "tokens", f"bench-{steps}.bin"))
    w, s = np.median(whole), np.median(store)
    print(f"{rows} rows x {length} positions, {tokens:,} response tokens a step, 5 channels, {size / tokens:.1f} bytes a token")
    print(f"token store: {s * 1e3:.1f} ms a step = {tokens / s / 1e6:.2f} M tokens/s (median of {steps})")
    print(f"whole write_step (episodes, metrics, tokens): {w * 1e3:.1f} ms a step = {tokens / w / 1e6:.2f} M tokens/s")


if __name__ == "__main__":
    main()
