"""Write a gigscope run (``gigscope-run/1`` with its token store) while TRL's ``GRPOTrainer`` trains.

One line, after the trainer is made and before it trains::

    from gigscope.trl import watch
    trainer = GRPOTrainer(model=..., reward_funcs=[...], args=GRPOConfig(...), train_dataset=...)
    watch(trainer, "runs/my-grpo")
    trainer.train()

Open the directory with ``gigscope runs/my-grpo`` while it trains. Written (TRL 1.16):

- every training completion as an episode of one step, grouped as TRL groups them (``num_generations``
  consecutive completions of one prompt): the prompt, the completion, each reward function's value
  (``outcome.rewards``, null where the function returned None), TRL's advantage (``advantages``);
- ``run.json`` with TRL's advantage settings (``scale_rewards``, ``reward_weights``,
  ``multi_objective_aggregation``), so ``gigscope advantages`` recomputes TRL's advantages without flags;
- per token (``tokens/``): the completion ids and their text, the loss mask, the advantage, the old, reference
  and sampler log-probabilities where TRL computed them (``old_per_token_logps`` only with
  ``num_iterations > 1`` or off-policy steps, else the loss's own log-probabilities before the update;
  ``ref_per_token_logps`` with ``beta != 0``; ``sampling_per_token_logps`` with vLLM), and from the loss of
  the first update that trains each completion its entropy, importance ratio and whether it was clipped
  (TRL's rule for ``clip_ratio``: ratio below 1 − ε_low with a negative advantage, or above 1 + ε_high with a
  positive one; null for loss types that do not clip);
- each logging step's numbers in ``metrics.jsonl``.

How: ``watch`` wraps three methods of that trainer object (``_generate_and_score_completions``,
``_compute_loss`` and ``_get_per_token_logps_and_entropies``) and adds a callback; it changes no value TRL
computes. The generation batch carries one more tensor, ``gigscope_row``, so the loss's rows (shuffled and
split by TRL) are matched to their completions. A generation batch is written once the loss has seen all
its rows (or when the next batch is generated, or training ends). Writing never stops training: an error is
reported once on standard error and that batch skipped. Only single-process training is written (with
several processes, each would hold a slice).
"""

import json
import math
import os
import sys

import numpy as np
from transformers import TrainerCallback

from .verl import (
    EPISODES_FILE,
    FORMAT,
    METRICS_FILE,
    TokenStoreWriter,
    _append_bytes,
    _write_run_meta,
    _now,
    _to_numpy,
)

__all__ = ["watch", "GRPORunWriter", "ROW_KEY"]

#: The generation batch's extra tensor: each completion's row in the batch as generated.
ROW_KEY = "gigscope_row"

#: TRL loss types whose loss clips the ratio (``coef_2 = clamp(coef_1, 1 - ε_low, 1 + ε_high)``).
_CLIPPING_LOSSES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")


def watch(trainer, run_dir, name=None, log=None):
    """Make ``trainer`` (a TRL ``GRPOTrainer``) write a gigscope run to ``run_dir`` while it trains. Returns the
    :class:`GRPORunWriter`."""
    return GRPORunWriter(trainer, run_dir, name=name, log=log)


def _message_text(value):
    """A prompt or completion as text: a string as is; chat messages as ``role: content`` blocks separated
    by blank lines (as gigscope renders TRL's logged chats)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        blocks = []
        for message in value:
            if isinstance(message, dict):
                blocks.append(f"{message.get('role', '')}: {message.get('content', '')}")
            else:
                blocks.append(str(message))
        return "\n\n".join(blocks)
    return str(value)


def _instruction(prompt):
    """The task instruction: the prompt, or for a chat its last user message."""
    if isinstance(prompt, (list, tuple)):
        users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            return str(users[-1])
    return _message_text(prompt)


def _finite(x):
    x = float(x)
    return x if math.isfinite(x) else None


class _Batch:
    """A generation batch waiting for its loss values."""

    def __init__(self, iteration, episodes, ids, mask, keep, columns):
        self.iteration = iteration
        self.episodes = episodes  # (group id, [episode dicts]) in row order of groups
        self.ids = ids
        self.mask = mask
        self.keep = keep
        self.columns = columns  # name → (B, T) float32 array
        self.loss = {}  # row → {"entropy": (T,), "ratio": (T,), "clipped": (T,) or None, "old_logprob": (T,)}


class GRPORunWriter:
    """Writes a TRL ``GRPOTrainer`` run as a gigscope run directory while it trains (see the module doc)."""

    def __init__(self, trainer, run_dir, name=None, log=None):
        self.trainer = trainer
        self.run_dir = os.fspath(run_dir)
        self.log = log
        #: The last error while writing (None while writing works), and batches skipped for errors.
        self.last_error = None
        self.skipped = 0
        self._failing = False
        self._pending = None
        self._capture = None
        self._groups = {}
        self._episode_ids = set()
        self._tokens = TokenStoreWriter(self.run_dir, getattr(trainer, "processing_class", None), self._warn_once)
        self._warned = set()
        os.makedirs(self.run_dir, exist_ok=True)
        self._write_meta(name or os.path.basename(os.path.normpath(self.run_dir)))
        self._wrap()

    # -- settings -----------------------------------------------------------------------------------------

    def _settings(self):
        t = self.trainer
        weights = getattr(t, "reward_weights", None)
        weights = [float(w) for w in _to_numpy(weights).reshape(-1).tolist()] if weights is not None else None
        return {
            "estimator": "grpo",
            "scale_rewards": str(getattr(t, "scale_rewards", "group")),
            "reward_weights": weights,
            "aggregation": str(getattr(t, "multi_objective_aggregation", "sum_then_normalize")),
        }

    def _write_meta(self, name):
        t = self.trainer
        args = getattr(t, "args", None)
        meta = {
            "format": FORMAT,
            "name": str(name),
            "created": _now(),
            "advantage": {k: v for k, v in self._settings().items() if v is not None},
            "notes": "Written by gigscope.trl while TRL's GRPOTrainer trained.",
            "source": {"trainer": "trl", "writer": "gigscope.trl", "version": 1},
            "reward_functions": list(getattr(t, "reward_func_names", [])),
            "trl": {
                "num_generations": getattr(t, "num_generations", None),
                "beta": _finite(getattr(t, "beta", float("nan"))),
                "loss_type": getattr(t, "loss_type", None),
                "importance_sampling_level": getattr(t, "importance_sampling_level", None),
                "epsilon_low": _finite(getattr(t, "epsilon_low", float("nan"))),
                "epsilon_high": _finite(getattr(t, "epsilon_high", float("nan"))),
                "num_iterations": getattr(args, "num_iterations", None),
            },
        }
        data = json.dumps(meta, ensure_ascii=False, allow_nan=False, indent=2).encode("utf-8") + b"\n"
        _write_run_meta(self.run_dir, data)

    # -- hooks --------------------------------------------------------------------------------------------

    def _wrap(self):
        t = self.trainer
        generate = t._generate_and_score_completions
        compute_loss = t._compute_loss
        logps = t._get_per_token_logps_and_entropies

        def generate_and_record(generation_batch):
            output = generate(generation_batch)
            if t.model.training:
                self._guard("a generation batch", self._flush)
                self._guard("a generation batch", lambda: self._start(output))
            return output

        def compute_loss_and_record(model, inputs):
            self._capture = []
            try:
                loss = compute_loss(model, inputs)
            finally:
                captured, self._capture = self._capture, None
            if model.training:
                self._guard("the loss values", lambda: self._record_loss(inputs, captured))
            return loss

        def logps_and_capture(*args, **kwargs):
            result = logps(*args, **kwargs)
            if self._capture is not None and kwargs.get("compute_entropy"):
                self._capture.append(result)
            return result

        t._generate_and_score_completions = generate_and_record
        t._compute_loss = compute_loss_and_record
        t._get_per_token_logps_and_entropies = logps_and_capture
        t.add_callback(_Callback(self))

    def _guard(self, what, action):
        try:
            action()
        except Exception as err:  # noqa: BLE001 - never stop training
            self.skipped += 1
            self.last_error = err
            if not self._failing:
                self._failing = True
                self._say(f"could not write {what} to {self.run_dir}: {type(err).__name__}: {err} (training goes on)")
            return
        self._failing = False

    # -- generation batches -------------------------------------------------------------------------------

    def _start(self, output):
        import torch  # TRL's own dependency: only here, where TRL is training

        t = self.trainer
        if getattr(t.accelerator, "num_processes", 1) != 1:
            self._warn_once("processes", "several training processes: gigscope.trl writes single-process runs only")
            return
        advantages = _to_numpy(output["advantages"]).astype(np.float32).reshape(-1)
        b = advantages.size
        output[ROW_KEY] = torch.arange(b, device=output["advantages"].device)
        logs = t._logs
        prompts = list(logs["prompt"])[-b:]
        completions = list(logs["completion"])[-b:]
        names = list(t.reward_func_names)
        rewards = {name: list(logs["rewards"][name])[-b:] for name in names}
        ids = _to_numpy(output["completion_ids"]).astype(np.int64)
        mask = _to_numpy(output["completion_mask"]).astype(bool)
        keep = self._response_tokens(ids)
        iteration = int(t.state.global_step) + 1
        n = int(getattr(t, "num_generations", 1) or 1)
        episodes = []
        for k in range(0, b, n):
            group = self._group_id(f"it{iteration}-g{k // n + 1}")
            lines = []
            for j in range(k, min(k + n, b)):
                values = {name: _finite(rewards[name][j]) for name in names}
                scored = [v for v in values.values() if v is not None]
                reward = float(sum(scored)) if scored else 0.0
                episode_id = f"{group}-e{j - k + 1}"
                lines.append(
                    {
                        "id": episode_id,
                        "group": group,
                        "iteration": iteration,
                        "task": {"instruction": _instruction(prompts[j])},
                        "steps": [
                            {
                                "observation": _message_text(prompts[j]),
                                "action": _message_text(completions[j]),
                                "reward": reward,
                                "tokens": int(mask[j].sum()),
                            }
                        ],
                        "outcome": {"score": reward, "success": False, "rewards": values},
                        "advantages": [float(advantages[j])] if math.isfinite(advantages[j]) else None,
                    }
                )
            episodes.append(lines)
        shape = ids.shape
        columns = {"advantage": np.broadcast_to(advantages[:, None], shape).astype(np.float32)}
        for key, channel in (
            ("old_per_token_logps", "old_logprob"),
            ("sampling_per_token_logps", "rollout_logprob"),
            ("ref_per_token_logps", "ref_logprob"),
        ):
            if output.get(key) is not None:
                columns[channel] = _to_numpy(output[key]).astype(np.float32).reshape(shape)
        self._pending = _Batch(iteration, episodes, ids, mask, keep, columns)

    def _response_tokens(self, ids):
        """Each completion's tokens up to and including its first end-of-sequence token (TRL pads after it)."""
        eos = list(getattr(self.trainer, "eos_token_ids", None) or [])
        is_eos = np.isin(ids, eos) if eos else np.zeros(ids.shape, dtype=bool)
        length = np.where(is_eos.any(axis=1), is_eos.argmax(axis=1) + 1, ids.shape[1])
        return np.arange(ids.shape[1])[None, :] < length[:, None]

    def _group_id(self, group):
        count = self._groups.get(group, 0) + 1
        self._groups[group] = count
        return group if count == 1 else f"{group}~{count}"

    def _record_loss(self, inputs, captured):
        batch = self._pending
        if batch is None or ROW_KEY not in inputs or not captured:
            return
        t = self.trainer
        rows = _to_numpy(inputs[ROW_KEY]).astype(np.int64).reshape(-1)
        per_token_logps, entropies = captured[0][0], captured[0][1]
        logps = _to_numpy(per_token_logps).astype(np.float32)
        old = inputs.get("old_per_token_logps")
        old = logps if old is None else _to_numpy(old).astype(np.float32)
        mask = _to_numpy(inputs["completion_mask"]).astype(np.float32)
        if "tool_mask" in inputs:
            mask = mask * _to_numpy(inputs["tool_mask"]).astype(np.float32)
        advantages = _to_numpy(inputs["advantages"]).astype(np.float32)
        if advantages.ndim == 1:
            advantages = advantages[:, None]
        log_ratio = logps - old
        if getattr(t, "importance_sampling_level", "token") == "sequence":
            log_ratio = (log_ratio * mask).sum(-1, keepdims=True) / np.maximum(mask.sum(-1, keepdims=True), 1.0)
        ratio = np.broadcast_to(np.exp(log_ratio), logps.shape).astype(np.float32)
        clipped = None
        if getattr(t, "loss_type", None) in _CLIPPING_LOSSES:
            low = (ratio < 1 - t.epsilon_low) & (advantages < 0)
            high = (ratio > 1 + t.epsilon_high) & (advantages > 0)
            clipped = (low | high).astype(np.float32)
        entropy = None if entropies is None else _to_numpy(entropies).astype(np.float32)
        for k, row in enumerate(rows.tolist()):
            if row in batch.loss or not 0 <= row < batch.ids.shape[0]:
                continue  # a later iteration over the same batch: the first update's values are kept
            batch.loss[row] = {
                "entropy": None if entropy is None else entropy[k],
                "ratio": ratio[k],
                "clipped": None if clipped is None else clipped[k],
                "old_logprob": logps[k],
            }
        if len(batch.loss) == batch.ids.shape[0]:
            self._flush()

    def _flush(self):
        batch, self._pending = self._pending, None
        if batch is None:
            return
        b, width = batch.ids.shape
        columns = dict(batch.columns)
        present = {}
        for channel in ("entropy", "ratio", "clipped", "old_logprob"):
            if channel == "old_logprob" and channel in columns:
                continue  # TRL computed it at generation
            values = np.zeros((b, width), dtype=np.float32)
            have = np.zeros((b, width), dtype=bool)
            for row, loss in batch.loss.items():
                if loss.get(channel) is not None:
                    values[row] = loss[channel]
                    have[row] = True
            if have.any():
                columns[channel] = values
                present[channel] = have
        order = ("advantage", "old_logprob", "rollout_logprob", "ref_logprob", "entropy", "ratio", "clipped")
        keep = batch.keep
        cols = [
            (name, columns[name][keep], present[name][keep] if name in present else None)
            for name in order
            if name in columns
        ]
        keys = [(episode["id"], 0) for lines in batch.episodes for episode in lines]
        self._tokens.write(
            f"iteration-{batch.iteration:06d}.bin",
            batch.iteration,
            keys,
            keep.sum(axis=1),
            batch.ids[keep],
            batch.mask[keep],
            cols,
        )
        for lines in batch.episodes:
            text = "\n".join(json.dumps(e, ensure_ascii=False, allow_nan=False, separators=(",", ":")) for e in lines)
            _append_bytes(os.path.join(self.run_dir, EPISODES_FILE), (text + "\n").encode("utf-8"))

    def _metrics(self, state, logs):
        record = {"iteration": int(state.global_step), "time": _now()}
        for key, value in (logs or {}).items():
            if isinstance(value, bool):
                record[str(key)] = int(value)
            elif isinstance(value, (int, float)):
                record[str(key)] = _finite(value)
        line = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        _append_bytes(os.path.join(self.run_dir, METRICS_FILE), (line + "\n").encode("utf-8"))

    # -- reporting ----------------------------------------------------------------------------------------

    def _say(self, message):
        try:
            print(f"gigscope.trl: {message}", file=self.log if self.log is not None else sys.stderr, flush=True)
        except Exception:  # noqa: BLE001 - reporting must not fail either
            pass

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            self._say(message)


class _Callback(TrainerCallback):
    """Writes each logging step's metrics, and the last generation batch when training ends."""

    def __init__(self, writer):
        self.writer = writer

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.writer._guard("the metrics", lambda: self.writer._metrics(state, logs))

    def on_train_end(self, args, state, control, **kwargs):
        self.writer._guard("the last generation batch", self.writer._flush)
