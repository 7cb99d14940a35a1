"""Export verl-agent training batches as a gigscope run directory (format ``gigscope-run/1``).

``from gigscope.verl import RunExporter`` (or copy this one file next to your trainer: it needs the Python
standard library and numpy, nothing else; it never imports verl or torch, it only converts the tensors it is
given) and add three lines to the training loop of ``verl/trainer/ppo/ray_trainer.py`` (see python/VERL.md in
the gigscope repository)::

    exporter = RunExporter(run_dir, config=self.config, tokenizer=self.tokenizer)
    ...
    batch = gen_batch_output
    exporter.mark_rows(batch)                  # before adjust_batch / _balance_batch: keeps the true step order
    ...
    logger.log(data=metrics, step=self.global_steps)
    exporter.write_step(batch, step=self.global_steps, metrics=metrics)

``write_step`` appends every trajectory of the batch as one line of ``episodes.jsonl`` (a whole episode
group per write), one line of ``metrics.jsonl``, each response's tokens to the token store (``tokens/``: ids,
text, loss mask, advantages and whichever log-probabilities and entropies the batch holds), and keeps ``run.json`` (the advantage settings mapped from
the trainer's config, written atomically) up to date. It never raises: an error is reported once on
standard error and the step is skipped, so training goes on.

An existing run is appended to. Before its first append the exporter cuts a torn last line (an append that a
kill or a full disk left unfinished) off ``episodes.jsonl``, ``metrics.jsonl`` and ``tokens/index.jsonl`` and
keeps its bytes in ``<file>.torn``, so that the next line starts a line of its own instead of being glued to it.
"""

import datetime as _datetime
import errno
import json
import math
import os
import secrets
import sys

import numpy as np

__all__ = ["RunExporter", "TokenStoreWriter", "advantage_settings", "env_name", "ROW_KEY", "FORMAT"]

FORMAT = "gigscope-run/1"
EXPORTER_VERSION = 1
RUN_META_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
METRICS_FILE = "metrics.jsonl"
#: The token store (gigscope's ``run::tokens``): ``tokens/index.jsonl`` and one chunk file per training step.
TOKENS_DIR = "tokens"
TOKEN_INDEX_FILE = "index.jsonl"

#: Token ids past this are never decoded (their text is unknown): the texts' tables are indexed by id.
_MAX_TOKEN_ID = 1 << 24

#: Batch keys of the per-token channels (verl's names) → the token store's channel names, in the store's order.
TOKEN_CHANNELS = (
    ("advantages", "advantage"),
    ("old_log_probs", "old_logprob"),
    ("rollout_log_probs", "rollout_logprob"),
    ("ref_log_prob", "ref_logprob"),
    ("entropys", "entropy"),
)

#: ``non_tensor_batch`` key written by :meth:`RunExporter.mark_rows`: each row's position in the batch as the
#: rollout returned it (trajectory by trajectory, steps in order). It travels with the rows through
#: ``adjust_batch`` (whose copies keep it, so they can be recognised) and ``_balance_batch`` (which reorders).
ROW_KEY = "gigscope_row"

#: verl-agent estimators that gigscope recomputes itself.
_ESTIMATORS = {"gigpo": "gigpo", "grpo": "grpo", "rloo": "rloo"}

#: Environment names as verl-agent's ``make_envs`` recognises them (substring of ``env.env_name``).
_ENVS = ("webshop", "alfworld", "sokoban", "gym_cards", "appworld", "search")

#: verl-agent's WebShop and ALFWorld wrappers reward a won episode with 10 and a lost one with 0
#: (ALFWorld's multimodal variant adds the goal-condition success rate, at most 1): an episode reward of at
#: least 10 is a success there. The batch keeps no per-trajectory success flag.
_SUCCESS_REWARD = {"webshop": 10.0, "alfworld": 10.0}

#: A stored advantage may differ this much between the response tokens of one step (relative) and still
#: count as one value.
_TOKEN_SPREAD_TOLERANCE = 1e-6


# ----------------------------------------------------------------------------------------------------------
# Plain values
# ----------------------------------------------------------------------------------------------------------


def _to_numpy(x):
    """A numpy array from a numpy array, a torch tensor (any device, bf16 included) or a list."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "cpu"):
        x = x.cpu()
    if hasattr(x, "numpy"):
        try:
            return np.asarray(x.numpy())
        except (TypeError, RuntimeError):
            # numpy has no bfloat16: widen first.
            if hasattr(x, "float"):
                return np.asarray(x.float().numpy())
            raise
    return np.asarray(x)


def _number(x):
    """A Python float from a number, numpy scalar or one-element tensor/array (TypeError for anything else,
    strings included). float32 values keep their shortest decimal form (0.1, not 0.10000000149011612)."""
    if not isinstance(x, (np.ndarray, np.generic, bool, int, float)) and (hasattr(x, "numpy") or hasattr(x, "detach")):
        x = _to_numpy(x)
    if isinstance(x, np.ndarray):
        if x.size != 1:
            raise TypeError(f"expected one number, got an array of shape {x.shape}")
        x = x.reshape(-1)[0]
    if isinstance(x, (np.float32, np.float16)):
        return float(str(x)) if np.isfinite(x) else float(x)
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, (bool, int, float)):
        return float(x)
    raise TypeError(f"not a number: {type(x).__name__}")


def _finite_or_none(x):
    return x if math.isfinite(x) else None


def _nonfinite_name(x):
    """How a non-finite number is written where JSON has no number for it."""
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _json_safe(value, _depth=0):
    """Any config-like value as JSON-safe data: mappings → objects (keys as strings), sequences → arrays,
    numpy scalars → numbers, non-finite floats → null, anything else → its str()."""
    if _depth > 64:
        return str(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.ndarray):
        return [_json_safe(v, _depth + 1) for v in value.tolist()]
    if hasattr(value, "items") and callable(value.items):
        out = {}
        try:
            items = list(value.items())
        except Exception:  # an OmegaConf node whose interpolation cannot be resolved
            items = []
            for k in list(value.keys()):
                try:
                    items.append((k, value[k]))
                except Exception as err:  # noqa: BLE001 - keep what can be read
                    items.append((k, f"<unreadable: {err}>"))
        for k, v in items:
            out[str(k)] = _json_safe(v, _depth + 1)
        return out
    if isinstance(value, (list, tuple, set, frozenset)) or (
        hasattr(value, "__iter__") and hasattr(value, "__len__") and not isinstance(value, (bytes, bytearray))
    ):
        try:
            return [_json_safe(v, _depth + 1) for v in value]
        except Exception:  # noqa: BLE001
            return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _plain_config(config):
    """The trainer's config as plain JSON-safe data, interpolations resolved. With an interpolation that
    cannot be resolved, the config is read key by key: every other value is still resolved, that one is
    noted as unreadable."""
    if config is None:
        return {}
    omegaconf = sys.modules.get("omegaconf")
    if omegaconf is not None:
        try:
            if isinstance(config, (omegaconf.DictConfig, omegaconf.ListConfig)):
                config = omegaconf.OmegaConf.to_container(config, resolve=True)
        except Exception:  # noqa: BLE001 - read it key by key below
            pass
    plain = _json_safe(config)
    return plain if isinstance(plain, dict) else {"config": plain}


def _get(config, path, default=None):
    """``config["a"]["b"]`` for ``path`` "a.b", or ``default`` where a key is missing."""
    node = config
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node or node[key] is None:
            return default
        node = node[key]
    return node


def _as_bool(value, default):
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _as_float(value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# ----------------------------------------------------------------------------------------------------------
# Config → run.json
# ----------------------------------------------------------------------------------------------------------


def advantage_settings(config):
    """Map verl-agent's config (plain dict, see ``_plain_config``) to run.json's ``advantage`` object.

    Returns ``(advantage, unmapped)``: the settings gigscope's recomputation should use, and a list of
    sentences naming each active verl-agent option gigscope has no equivalent for.
    """
    config = config if isinstance(config, dict) else _plain_config(config)
    adv = {}
    unmapped = []
    estimator = str(_get(config, "algorithm.adv_estimator", "gae") or "gae").lower()
    if estimator in _ESTIMATORS:
        adv["estimator"] = _ESTIMATORS[estimator]
    else:
        unmapped.append(
            f"algorithm.adv_estimator={estimator}: gigscope has no such estimator; it recomputes GiGPO with the "
            "settings below, so stored and recomputed advantages differ by the difference of the estimators"
        )

    gamma = _as_float(_get(config, "algorithm.gamma"))
    if gamma is not None and 0.0 <= gamma <= 1.0:
        adv["gamma"] = gamma
    elif _get(config, "algorithm.gamma") is not None:
        unmapped.append(f"algorithm.gamma={_get(config, 'algorithm.gamma')}: outside gigscope's [0, 1]")

    omega = _as_float(_get(config, "algorithm.gigpo.step_advantage_w"))
    if omega is not None:
        adv["omega"] = omega

    mode = str(_get(config, "algorithm.gigpo.mode", "mean_norm"))
    if estimator == "grpo":
        # verl's GRPO divides by the std unless norm_adv_by_std_in_grpo is false (Dr.GRPO).
        by_std = _as_bool(_get(config, "algorithm.norm_adv_by_std_in_grpo"), True)
        adv["norm"] = "mean_std_norm" if by_std else "mean_norm"
    elif mode in ("mean_norm", "mean_std_norm"):
        adv["norm"] = mode
    else:
        unmapped.append(f"algorithm.gigpo.mode={mode}: not mean_norm or mean_std_norm")

    # verl-agent pools every step row of an episode group for the episode baseline
    # (compute_mean_std_cross_steps=True, not a config option).
    adv["pooling"] = "steps"

    if _as_bool(_get(config, "actor_rollout_ref.actor.use_invalid_action_penalty"), True):
        coef = _as_float(_get(config, "actor_rollout_ref.actor.invalid_action_penalty_coef", 0.1))
        if coef is None:
            unmapped.append("actor_rollout_ref.actor.invalid_action_penalty_coef is not a finite number")
        else:
            adv["invalid_penalty"] = coef
    else:
        adv["invalid_penalty"] = 0.0

    if _as_bool(_get(config, "algorithm.gigpo.enable_similarity"), False):
        theta = _as_float(_get(config, "algorithm.gigpo.similarity_thresh", 0.95))
        if theta is not None and 0.0 < theta < 1.0:
            adv["anchor"] = "similarity"
            adv["similarity"] = theta
        else:
            adv["anchor"] = "exact"
            unmapped.append("algorithm.gigpo.similarity_thresh outside (0, 1): recorded as exact anchors")
    else:
        adv["anchor"] = "exact"

    adv["success_reward"] = False
    adv["efficiency_alpha1"] = 0.0
    adv["efficiency_alpha2"] = 0.0

    if _as_bool(_get(config, "algorithm.use_kl_in_reward"), False):
        unmapped.append(
            "algorithm.use_kl_in_reward=True: the trainer's episode scores include a KL penalty gigscope "
            "does not know, so A_E differs"
        )
    return adv, unmapped


def env_name(config):
    """webshop / alfworld / sokoban / gym_cards / appworld / search from ``env.env_name``, else the part before
    its first '/', lower-cased; None when the config has no env name."""
    config = config if isinstance(config, dict) else _plain_config(config)
    name = _get(config, "env.env_name")
    if not isinstance(name, str) or not name.strip():
        return None
    low = name.strip().lower()
    for known in _ENVS:
        if known in low:
            return known
    return low.split("/", 1)[0]


# ----------------------------------------------------------------------------------------------------------
# Batches
# ----------------------------------------------------------------------------------------------------------


def _keys(mapping):
    try:
        return set(mapping.keys())
    except Exception:  # noqa: BLE001
        return set()


def _text(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, np.str_):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return None


def _anchor_text(value):
    """The anchor as a string whose equality is the trainer's: text as is; arrays, lists and numbers
    (e.g. Sokoban's image anchors, grouped by their flattened values) as canonical JSON."""
    text = _text(value)
    if text is not None or value is None:
        return text

    def hashable_like(x):
        if isinstance(x, np.ndarray):
            return [hashable_like(v) for v in x.reshape(-1).tolist()]
        if isinstance(x, (list, tuple)):
            return [hashable_like(v) for v in x]
        if isinstance(x, dict):
            return [[str(k), hashable_like(v)] for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))]
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and not math.isfinite(x):
            return _nonfinite_name(x)
        if isinstance(x, (bool, int, float, str)) or x is None:
            return x
        return str(x)

    if hasattr(value, "numpy") or hasattr(value, "detach"):
        value = _to_numpy(value)
    return json.dumps(hashable_like(value), separators=(",", ":"))


def _raw_prompt_text(value):
    """verl's ``raw_prompt`` (a chat: list of {"role", "content"}) as text, when a batch carries it."""
    text = _text(value)
    if text is not None:
        return text
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        parts = []
        for message in value:
            if isinstance(message, dict) and "content" in message:
                parts.append(str(message["content"]))
            elif _text(message) is not None:
                parts.append(_text(message))
        if parts:
            return "\n".join(parts)
    return None


class _Rows:
    """The columns of a batch that the export reads, as numpy arrays, row-aligned."""

    def __init__(self, batch):
        tensors = getattr(batch, "batch", None)
        non_tensor = getattr(batch, "non_tensor_batch", None)
        if tensors is None or non_tensor is None:
            raise TypeError("write_step needs a batch with .batch (tensors) and .non_tensor_batch (numpy arrays)")
        tkeys, nkeys = _keys(tensors), _keys(non_tensor)
        if "uid" not in nkeys:
            raise KeyError("the batch has no non_tensor_batch['uid']")
        if "responses" not in tkeys:
            raise KeyError("the batch has no batch['responses']")
        self.nt = non_tensor
        self.uid = np.asarray(non_tensor["uid"])
        if "traj_uid" in nkeys:
            self.traj_uid = np.asarray(non_tensor["traj_uid"])
        else:
            # Plain verl (RayPPOTrainer): every row is a trajectory of one step, named by its group and its
            # place in the rollout's batch (the row mark when there is one).
            place = non_tensor[ROW_KEY] if ROW_KEY in nkeys else range(len(self.uid))
            self.traj_uid = np.array([f"{u}/{int(p)}" for u, p in zip(self.uid.tolist(), place)], dtype=object)
        n = len(self.uid)
        self.n = n
        self.responses = _to_numpy(tensors["responses"])
        response_length = self.responses.shape[-1]
        attention = _to_numpy(tensors["attention_mask"]) if "attention_mask" in tkeys else None
        if "response_mask" in tkeys:
            self.response_mask = _to_numpy(tensors["response_mask"]).astype(bool)
        elif attention is not None:
            self.response_mask = attention[:, -response_length:].astype(bool)
        else:
            self.response_mask = np.ones(self.responses.shape, dtype=bool)
        if "prompts" in tkeys:
            self.prompts = _to_numpy(tensors["prompts"])
        elif "input_ids" in tkeys:
            self.prompts = _to_numpy(tensors["input_ids"])[:, :-response_length]
        else:
            self.prompts = None
        if self.prompts is not None:
            p = self.prompts.shape[-1]
            self.prompt_mask = attention[:, :p].astype(bool) if attention is not None else np.ones(self.prompts.shape, dtype=bool)
        self.advantages = _to_numpy(tensors["advantages"]) if "advantages" in tkeys else None
        #: The response's tokens (padding excluded): the attention mask's response part, else the loss mask.
        self.response_tokens = (
            attention[:, -response_length:].astype(bool) if attention is not None else self.response_mask
        )
        self.tensors = tensors
        self.tensor_keys = tkeys
        for name, arr in (("responses", self.responses), ("response_mask", self.response_mask)):
            if arr.shape[0] != n:
                raise ValueError(f"batch[{name!r}] has {arr.shape[0]} rows, non_tensor_batch['uid'] {n}")

    def column(self, key):
        return self.nt[key] if key in _keys(self.nt) else None


# ----------------------------------------------------------------------------------------------------------
# The exporter
# ----------------------------------------------------------------------------------------------------------


class RunExporter:
    """Writes a verl-agent run as a gigscope run directory while it trains.

    Args:
        run_dir: the run directory (created if needed). An existing run is appended to.
        config: the trainer's config (OmegaConf or a dict); mapped to run.json's ``advantage`` settings and
            stored whole (JSON-safe) under ``trainer_config``.
        tokenizer: the trainer's tokenizer (``decode(ids, skip_special_tokens=True)``; ``batch_decode`` is used
            when present). Without one, observations are the anchors and actions are empty.
        name: the run's name in run.json (default: ``trainer.experiment_name``, else the directory's name).
        env: the environment name in run.json (default: from ``env.env_name``; omitted when unknown).
        success_at: an episode whose reward (``episode_rewards``) is at least this is recorded as a success
            (``outcome.success``). Default "auto": 10 for webshop and alfworld (verl-agent's "win 10, lose 0"
            rewards), else no success is recorded. None: never.
        log: where the one-time error reports go (default: standard error).
    """

    def __init__(self, run_dir, config=None, tokenizer=None, name=None, env=None, success_at="auto", log=None):
        self.run_dir = os.fspath(run_dir)
        self.tokenizer = tokenizer
        self.log = log
        #: Steps whose export failed and was skipped.
        self.skipped_steps = 0
        #: The last export error (None when the last write_step succeeded).
        self.last_error = None
        self._failing = False
        self._meta_written = False
        self._tails_cut = False
        self._warned = set()
        self._written_groups = {}
        self._steps_written = 0
        self._tokens = TokenStoreWriter(self.run_dir, tokenizer, self._warn_once)
        try:
            self.trainer_config = _plain_config(config)
        except Exception as err:  # noqa: BLE001
            self.trainer_config = {}
            self._warn_once("config", f"could not read the trainer config ({err!r}); run.json has no settings")
        self.advantage, self.unmapped = advantage_settings(self.trainer_config)
        self.name = name or _get(self.trainer_config, "trainer.experiment_name") or os.path.basename(
            os.path.normpath(self.run_dir)
        )
        self.env = env or env_name(self.trainer_config)
        self.success_at = _SUCCESS_REWARD.get(self.env) if success_at == "auto" else success_at
        try:
            self._write_meta()
        except Exception as err:  # noqa: BLE001 - never stop training
            self._report(err, "run.json")

    # -- public -------------------------------------------------------------------------------------------

    def mark_rows(self, batch):
        """Record each row's position (``non_tensor_batch["gigscope_row"]``) in the batch as the rollout
        returned it, before ``adjust_batch`` copies rows and ``_balance_batch`` reorders them. Returns the
        batch. Never raises."""
        try:
            non_tensor = batch.non_tensor_batch
            n = len(non_tensor["uid"])
            non_tensor[ROW_KEY] = np.arange(n, dtype=np.int64).astype(object)
        except Exception as err:  # noqa: BLE001
            self._warn_once("mark", f"mark_rows could not mark the batch ({err!r}); steps keep the batch order")
        return batch

    def write_step(self, batch, step, metrics=None):
        """Append every trajectory of ``batch`` (after the trainer computed its advantages) as episodes of
        iteration ``step``, and the step's numeric ``metrics``. Returns True when everything was written;
        on any error reports it (once while errors last) and returns False: the step is skipped."""
        try:
            if not self._meta_written:
                self._write_meta()
            if not self._tails_cut:
                for name in (EPISODES_FILE, METRICS_FILE, os.path.join(TOKENS_DIR, TOKEN_INDEX_FILE)):
                    _cut_torn_tail(os.path.join(self.run_dir, name))
                self._tails_cut = True
            groups, token_rows = self._episode_groups(batch, int(step))
            self._write_tokens(token_rows, int(step))
            for lines in groups:
                self._append(EPISODES_FILE, lines)
            self._append(METRICS_FILE, [self._metrics_line(int(step), metrics)])
        except Exception as err:  # noqa: BLE001 - never stop training
            self.skipped_steps += 1
            self._report(err, f"step {step}")
            return False
        if self._failing:
            self._say(f"writing again at step {step} ({self.skipped_steps} step(s) skipped in all)")
        self._failing = False
        self.last_error = None
        self._steps_written += 1
        return True

    # -- run.json -----------------------------------------------------------------------------------------

    def _write_meta(self):
        os.makedirs(self.run_dir, exist_ok=True)
        path = os.path.join(self.run_dir, RUN_META_FILE)
        meta = {}
        try:
            with open(path, "rb") as f:
                old = json.loads(f.read())
            if isinstance(old, dict):
                meta = old
        except (OSError, ValueError):
            pass
        meta["format"] = FORMAT
        meta["name"] = str(self.name)
        if self.env:
            meta["env"] = self.env
        meta.setdefault("created", _now())
        meta["advantage"] = dict(self.advantage)
        notes = ["Exported from verl-agent by gigscope.verl."]
        if self.unmapped:
            notes.append("No gigscope equivalent: " + "; ".join(self.unmapped) + ".")
        meta["notes"] = " ".join(notes)
        meta["source"] = {"trainer": "verl-agent", "exporter": "gigscope.verl", "version": EXPORTER_VERSION}
        meta["trainer_config"] = self.trainer_config
        data = json.dumps(meta, ensure_ascii=False, allow_nan=False, indent=2).encode("utf-8") + b"\n"
        _write_run_meta(self.run_dir, data)
        self._meta_written = True

    # -- episodes -----------------------------------------------------------------------------------------

    def _episode_groups(self, batch, step):
        """The lines to append, one list of episode lines per episode group."""
        rows = _Rows(batch)
        n = rows.n
        order, copies = self._order(rows)
        active = rows.column("active_masks")
        if active is not None:
            active = np.asarray(active).astype(bool)
            order = [i for i in order if active[i]]

        # Trajectories by episode group, both in order of first appearance; steps in order.
        groups = {}
        for i in order:
            uid = str(rows.uid[i])
            traj = str(rows.traj_uid[i])
            groups.setdefault(uid, {}).setdefault(traj, []).append(i)
        if not groups:
            return [], ([], None)

        observations, actions = self._texts(rows, order)
        rewards = rows.column("rewards")
        valid = rows.column("is_action_valid")
        anchors = rows.column("anchor_obs")
        episode_rewards = rows.column("episode_rewards")
        episode_lengths = rows.column("episode_lengths")
        tool_callings = rows.column("tool_callings")
        data_source = rows.column("data_source")

        out = []
        #: (episode id, step index, row) of every step written, for the token store.
        token_steps = []
        for uid, trajectories in groups.items():
            group_name = self._group_name(uid)
            suffix = group_name[len(uid):]
            lines = []
            for traj, idx in trajectories.items():
                steps = []
                stored = []
                for i in idx:
                    token_steps.append((traj + suffix, len(steps), i))
                    step_record = {"observation": observations[i]}
                    if anchors is not None:
                        anchor = _anchor_text(anchors[i])
                        if anchor is not None:
                            step_record["anchor"] = anchor
                    step_record["action"] = actions[i]
                    reward = _number(rewards[i]) if rewards is not None else 0.0
                    if not math.isfinite(reward):
                        step_record["reward_raw"] = _nonfinite_name(reward)
                        reward = 0.0
                    step_record["reward"] = reward
                    step_record["valid"] = bool(valid[i]) if valid is not None else True
                    step_record["tokens"] = int(rows.response_mask[i].sum())
                    if copies.get(i, 1) > 1:
                        step_record["copies"] = copies[i]
                    if rows.advantages is not None:
                        stored.append(self._step_advantage(rows, i, step_record))
                    steps.append(step_record)
                episode = {"id": traj + suffix, "group": group_name, "iteration": step, "steps": steps}
                first = idx[0]
                if episode_rewards is not None:
                    score = _number(episode_rewards[first])
                    if math.isfinite(score):
                        episode["outcome"] = {"score": score}
                        if self.success_at is not None:
                            episode["outcome"]["success"] = bool(score >= self.success_at)
                    else:
                        episode["outcome"] = {"score_raw": _nonfinite_name(score)}
                if rows.advantages is not None:
                    if all(a is not None and math.isfinite(a) for a in stored):
                        episode["advantages"] = stored
                    else:
                        # JSON has no NaN: such an episode keeps its values out of `advantages` (so gigscope
                        # compares nothing for it) and spells them in `trainer_advantages`.
                        episode["trainer_advantages"] = [
                            None if a is None else (a if math.isfinite(a) else _nonfinite_name(a)) for a in stored
                        ]
                episode["uid"] = uid
                episode["traj_uid"] = traj
                if data_source is not None:
                    episode["data_source"] = str(data_source[first])
                if episode_lengths is not None:
                    length = _number(episode_lengths[first])
                    if math.isfinite(length):
                        episode["episode_length"] = int(length) if length.is_integer() else length
                if tool_callings is not None:
                    calls = _number(tool_callings[first])
                    if math.isfinite(calls):
                        episode["tool_callings"] = int(calls) if calls.is_integer() else calls
                lines.append(json.dumps(episode, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
            out.append(lines)
        return out, (token_steps, rows)

    def _order(self, rows):
        """Row indices in their true order, without adjust_batch's copies, and each kept row's copy count."""
        marks = rows.column(ROW_KEY)
        if marks is None:
            self._warn_once(
                "unmarked",
                "the batch has no 'gigscope_row' (call exporter.mark_rows(batch) right after "
                "`batch = gen_batch_output`): steps are exported in batch order, which trainer.balance_batch "
                "changes, and adjust_batch's copies are exported as steps",
            )
            return list(range(rows.n)), {}
        marks = [int(m) for m in np.asarray(marks).tolist()]
        first = {}
        copies = {}
        for i, m in enumerate(marks):
            if m in first:
                copies[first[m]] = copies.get(first[m], 1) + 1
            else:
                first[m] = i
        order = sorted(first.values(), key=lambda i: marks[i])
        if copies:
            self._warn_once(
                "copies",
                "adjust_batch copied rows of the batch (they took part in the trainer's group statistics): "
                "each step is exported once with 'copies' set, which gigscope counts as the trainer did",
            )
        return order, copies

    def _group_name(self, uid):
        """``uid``, or ``uid~2``, ``uid~3``… when this exporter already wrote a group of that name (the same
        batch written again): ids stay unique and the new lines do not join the old group."""
        count = self._written_groups.get(uid, 0) + 1
        self._written_groups[uid] = count
        return uid if count == 1 else f"{uid}~{count}"

    def _texts(self, rows, order):
        """Observation and action text of the rows in ``order``."""
        observations = {}
        actions = {}
        raw = rows.column("raw_prompt")
        if self.tokenizer is None:
            self._warn_once("tokenizer", "no tokenizer: observations are the anchors, actions are left empty")
            anchors = rows.column("anchor_obs")
            for i in order:
                text = _raw_prompt_text(raw[i]) if raw is not None else None
                if text is None and anchors is not None:
                    text = _anchor_text(anchors[i])
                observations[i] = text or ""
                actions[i] = ""
            return observations, actions
        response_ids = [rows.responses[i][rows.response_mask[i]].tolist() for i in order]
        for i, text in zip(order, self._decode(response_ids)):
            actions[i] = text
        need_prompt = []
        for i in order:
            text = _raw_prompt_text(raw[i]) if raw is not None else None
            if text is not None:
                observations[i] = text
            else:
                need_prompt.append(i)
        if need_prompt:
            if rows.prompts is None:
                for i in need_prompt:
                    observations[i] = ""
            else:
                prompt_ids = [rows.prompts[i][rows.prompt_mask[i]].tolist() for i in need_prompt]
                for i, text in zip(need_prompt, self._decode(prompt_ids)):
                    observations[i] = text
        return observations, actions

    def _decode(self, sequences):
        tok = self.tokenizer
        try:
            if hasattr(tok, "batch_decode"):
                texts = tok.batch_decode(sequences, skip_special_tokens=True)
            else:
                texts = [tok.decode(ids, skip_special_tokens=True) for ids in sequences]
        except (IndexError, KeyError, ValueError, TypeError, OverflowError):
            # Ids the tokenizer does not know: each sequence is decoded without them.
            self._warn_once(
                "decode-unknown",
                "a prompt or response holds token ids the tokenizer does not know: its text is decoded without them",
            )
            texts = [
                tok.decode([i for i in ids if self._tokens.knows(i)], skip_special_tokens=True) for ids in sequences
            ]
        return [t if isinstance(t, str) else str(t) for t in texts]

    def _step_advantage(self, rows, i, step_record):
        """The advantage the trainer stored for row ``i``: the value on its first response token (every
        response token of a step carries the same value for GiGPO, GRPO and RLOO). None when the row has no
        response token."""
        mask = rows.response_mask[i]
        if rows.advantages.shape != rows.response_mask.shape:
            raise ValueError(
                f"batch['advantages'] has shape {rows.advantages.shape}, the response mask {rows.response_mask.shape}"
            )
        at = np.flatnonzero(mask)
        if at.size == 0:
            return None
        first = _number(rows.advantages[i][at[0]])
        values = np.asarray(rows.advantages[i][at], dtype=np.float64)
        if values.size > 1 and np.all(np.isfinite(values)):
            lo, hi = float(values.min()), float(values.max())
            if hi - lo > _TOKEN_SPREAD_TOLERANCE * max(1.0, abs(first)):
                step_record["advantage_tokens"] = {"min": lo, "max": hi, "mean": float(values.mean())}
                self._warn_once(
                    "spread",
                    "the stored advantages vary across a step's response tokens (a token-level estimator?): "
                    "each step records its first token's value, and min/max/mean under 'advantage_tokens'",
                )
        return first

    # -- tokens -------------------------------------------------------------------------------------------

    def _write_tokens(self, token_rows, step):
        """Append the tokens of every step written (``(episode id, step index, row)``) to the token store, in
        the chunk ``tokens/step-<step>.bin``. A channel whose array does not match the responses' shape is
        left out (null), said once; the rest is written."""
        steps, rows = token_rows
        if not steps:
            return
        order = np.asarray([i for _, _, i in steps], dtype=np.int64)
        keep = rows.response_tokens[order]
        columns = []
        for key, name in TOKEN_CHANNELS:
            if key not in rows.tensor_keys:
                continue
            values = _to_numpy(rows.tensors[key])
            if values.shape != rows.responses.shape:
                self._warn_once(
                    f"shape-{key}",
                    f"batch[{key!r}] has shape {values.shape}, batch['responses'] {rows.responses.shape}: "
                    f"the token store records no {name} (null)",
                )
                continue
            columns.append((name, values[order][keep], None))
        self._tokens.write(
            f"step-{step:06d}.bin",
            step,
            [(episode, k) for episode, k, _ in steps],
            keep.sum(axis=1),
            rows.responses[order][keep],
            rows.response_mask[order][keep],
            columns,
        )

    # -- metrics ------------------------------------------------------------------------------------------

    def _metrics_line(self, step, metrics):
        record = {"iteration": step, "time": _now()}
        for key, value in (metrics or {}).items():
            key = str(key)
            if key in ("iteration", "time"):
                key = "trainer/" + key
            try:
                number = _number(value)
            except (TypeError, ValueError):
                continue  # not a number (strings, lists): metrics.jsonl holds numeric metrics only
            if isinstance(value, (bool, np.bool_)):
                record[key] = int(bool(value))
            elif (isinstance(value, (int, np.integer))) and math.isfinite(number):
                record[key] = int(value)
            else:
                # JSON has no NaN or infinity: a non-finite metric is written as null.
                record[key] = _finite_or_none(number)
        return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))

    # -- writing ------------------------------------------------------------------------------------------

    def _append(self, file_name, lines):
        """Append ``lines`` (a whole episode group, one metrics record, a step's token index lines) with one
        ``write`` (``_append_bytes``), so no torn line is left for the next append to glue onto."""
        if not lines:
            return
        os.makedirs(self.run_dir, exist_ok=True)
        _append_bytes(os.path.join(self.run_dir, file_name), ("\n".join(lines) + "\n").encode("utf-8"))

    # -- reporting ----------------------------------------------------------------------------------------

    def _say(self, message):
        stream = self.log if self.log is not None else sys.stderr
        try:
            print(f"gigscope.verl: {message}", file=stream, flush=True)
        except Exception:  # noqa: BLE001 - reporting must not fail either
            pass

    def _report(self, err, what):
        self.last_error = err
        if not self._failing:
            self._failing = True
            self._say(
                f"could not write {what} to {self.run_dir}: {type(err).__name__}: {err} "
                "(training goes on; further failures are not reported until a step is written again)"
            )

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            self._say(message)


class TokenStoreWriter:
    """Appends step records to a run's token store (``tokens/``; the byte layout is gigscope's
    ``run::tokens``, documented in its README and ``assets/tokens.schema.json``): a chunk's bytes first, whole,
    then one index line per step, so a reader never meets an index line whose record is incomplete.

    Token texts are decoded once per distinct id with the tokenizer given (``decode([id])``, else
    ``convert_ids_to_tokens``; anything with either) and kept; an id it does not know has no text (null), said
    once through ``warn(key, message)``.
    """

    def __init__(self, run_dir, tokenizer, warn):
        self.run_dir = os.fspath(run_dir)
        self.tokenizer = tokenizer
        self.warn = warn
        # Texts decoded so far: per id its state (0 not asked, 1 known, 2 unknown to the tokenizer), its text's
        # start and length in `_flat`, every text one after another.
        self._state = np.zeros(0, dtype=np.int8)
        self._start = np.zeros(0, dtype=np.int64)
        self._length = np.zeros(0, dtype=np.int64)
        self._flat = np.zeros(0, dtype=np.uint8)

    def write(self, chunk_name, iteration, keys, counts, ids, mask, columns):
        """Append one record per ``keys[k]`` = (episode id, step index) to the chunk ``chunk_name``. ``counts``:
        each record's number of tokens; ``ids``, ``mask`` and each column's values: every record's tokens one
        after another. ``columns``: ``(channel name, values, present)`` with ``present`` a bool array (a token
        with no value) or None (every token has one)."""
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        ids = np.asarray(ids).astype(np.int64).reshape(-1)
        total = int(counts.sum())
        if ids.size != total or len(keys) != counts.size:
            raise ValueError(f"{len(keys)} records of {total} tokens in all, but {ids.size} token ids")
        mask = np.asarray(mask).astype(np.uint8).reshape(-1)
        if mask.size != total:
            raise ValueError(f"{mask.size} mask values for {total} tokens")
        prepared = []
        for name, values, present in columns:
            values = np.ascontiguousarray(np.asarray(values).reshape(-1), dtype="<f4")
            present = None if present is None else np.asarray(present, dtype=bool).reshape(-1)
            if values.size != total or (present is not None and present.size != total):
                raise ValueError(f"{name}: {values.size} values for {total} tokens")
            if present is not None:
                values = np.where(present, values, np.float32(0))
            prepared.append((name, values, present))
        text, ends, known = self._token_texts(ids, keys, counts)
        ids32 = ids.astype("<i4")
        names = [name for name, _, _ in prepared]
        directory = os.path.join(self.run_dir, TOKENS_DIR)
        os.makedirs(directory, exist_ok=True)
        chunk_path = os.path.join(directory, chunk_name)
        try:
            at = os.path.getsize(chunk_path)
        except FileNotFoundError:
            at = 0
        parts, lines = [], []
        # Trained tokens (mask 1) before each token: a record's count is a difference of two of them.
        trained_before = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
        lo = 0
        for (episode, step_index), n in zip(keys, counts.tolist()):
            hi = lo + n
            text_lo = int(ends[lo - 1]) if lo > 0 else 0
            text_hi = int(ends[hi - 1]) if hi > 0 else text_lo
            record = [
                ids32[lo:hi].tobytes(),
                mask[lo:hi].tobytes(),
                np.packbits(known[lo:hi], bitorder="little").tobytes(),
                (ends[lo:hi] - text_lo).astype("<u4").tobytes(),
                text[text_lo:text_hi],
            ]
            everything = None
            for _, values, present in prepared:
                if present is None:
                    if everything is None:
                        everything = np.packbits(np.ones(n, dtype=bool), bitorder="little").tobytes()
                    record.append(everything)
                else:
                    record.append(np.packbits(present[lo:hi], bitorder="little").tobytes())
                record.append(values[lo:hi].tobytes())
            length = sum(len(part) for part in record)
            parts.extend(record)
            line = {
                "episode": str(episode),
                "step": int(step_index),
                "iteration": int(iteration),
                "chunk": chunk_name,
                "offset": at,
                "length": length,
                "tokens": n,
                "text_bytes": text_hi - text_lo,
                "trained": int(trained_before[hi] - trained_before[lo]),
                "channels": names,
            }
            lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
            at += length
            lo = hi
        _append_bytes(chunk_path, b"".join(parts))
        _append_bytes(os.path.join(directory, TOKEN_INDEX_FILE), ("\n".join(lines) + "\n").encode("utf-8"))

    def _token_texts(self, ids, keys, counts):
        """Every token's text, one after another (UTF-8 bytes), the end of each token's text in it, and
        whether the tokenizer knew each id. Gathered with numpy from the texts decoded so far (all of them in
        one byte array, with each id's start and length), so a step costs no Python call per token."""
        ids = np.asarray(ids, dtype=np.int64)
        self._learn(ids)
        inside = (ids >= 0) & (ids < self._state.size)
        at = np.where(inside, ids, 0)
        known = inside & (self._state[at] == 1)
        lengths = np.where(known, self._length[at], 0)
        ends = np.cumsum(lengths)
        starts = np.where(known, self._start[at], 0)
        # Byte k of the step's text is byte k - (its token's end - length) + its token's start of `_flat`.
        small = np.int32 if self._flat.size < (1 << 31) - 1 else np.int64
        shift = (starts - (ends - lengths)).astype(small)
        positions = np.arange(int(ends[-1]) if ends.size else 0, dtype=small)
        positions += np.repeat(shift, lengths)
        text = self._flat[positions].tobytes()
        if self.tokenizer is not None and not known.all():
            first = int(np.flatnonzero(~known)[0])
            episode, step_index = keys[int(np.searchsorted(np.cumsum(counts), first, side="right"))]
            self.warn(
                f"unknown-id-{int(ids[first])}",
                f"{int((~known).sum())} token(s) with ids the tokenizer does not know (e.g. id {int(ids[first])} "
                f"in episode {episode!r} step {step_index}): their text is recorded as unknown (null)",
            )
        return text, ends, known

    def _learn(self, ids):
        """Decode the ids not decoded yet (ids from 0 to the tokenizer's length, at most 2^24)."""
        limit = _MAX_TOKEN_ID
        try:
            limit = min(limit, len(self.tokenizer))
        except TypeError:
            pass  # a tokenizer without a length: ask it
        inside = (ids >= 0) & (ids < min(limit, self._state.size))
        fresh = ids[~inside]
        fresh = fresh[(fresh >= 0) & (fresh < limit)]
        asked = ids[inside]
        fresh = np.concatenate([fresh, asked[self._state[asked] == 0]])
        if not fresh.size:
            return
        uniq = np.unique(fresh)
        size = int(uniq[-1]) + 1
        if size > self._state.size:
            grown = max(size, 2 * self._state.size)
            self._state = np.concatenate([self._state, np.zeros(grown - self._state.size, dtype=np.int8)])
            self._start = np.concatenate([self._start, np.zeros(grown - self._start.size, dtype=np.int64)])
            self._length = np.concatenate([self._length, np.zeros(grown - self._length.size, dtype=np.int64)])
        new = uniq[self._state[uniq] == 0]
        if not new.size:
            return
        pieces, at = [], self._flat.size
        for token_id in new.tolist():
            text = self._decode(token_id)
            if text is None:
                self._state[token_id] = 2
                continue
            data = text.encode("utf-8")
            self._state[token_id] = 1
            self._start[token_id] = at
            self._length[token_id] = len(data)
            pieces.append(data)
            at += len(data)
        if pieces:
            self._flat = np.concatenate([self._flat, np.frombuffer(b"".join(pieces), dtype=np.uint8)])

    def knows(self, token_id):
        """Whether the tokenizer knows the id (has a text for it)."""
        return self._decode(int(token_id)) is not None

    def _decode(self, token_id):
        """One token's text, or None when there is no tokenizer or it does not know the id."""
        tok = self.tokenizer
        if tok is None or token_id < 0:
            return None
        try:
            if token_id >= len(tok):
                return None
        except TypeError:
            pass  # a tokenizer without a length: ask it
        try:
            if hasattr(tok, "decode"):
                text = tok.decode([token_id], skip_special_tokens=False)
            else:
                text = tok.convert_ids_to_tokens([token_id])[0]
        except (IndexError, KeyError, ValueError, TypeError, OverflowError):
            return None
        return text if isinstance(text, str) else None


def _append_bytes(path, data):
    """Append ``data`` with one write on an O_APPEND descriptor; a failed write is cut back and its error names
    ``path``."""
    if not data:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            # A short write (the disk filled mid-way) is followed by the rest, which fails with the reason.
            while written < len(data):
                more = os.write(fd, memoryview(data)[written:])
                if more == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                written += more
        except OSError as err:
            _truncate_if(fd, start, len(data))
            raise _naming(err, path) from err
    finally:
        os.close(fd)


def _cut_torn_tail(path):
    """If ``path`` does not end in a newline, move the bytes after its last newline to ``<path>.torn`` (appended,
    with a newline of their own, synced) and cut them from ``path``."""
    try:
        f = open(path, "r+b")
    except FileNotFoundError:
        return
    with f:
        size = os.fstat(f.fileno()).st_size
        end, tail = size, b""
        while end > 0:
            start = max(0, end - (64 << 10))
            f.seek(start)
            block = f.read(end - start)
            if end == size and block.endswith(b"\n"):
                return
            newline = block.rfind(b"\n")
            if newline >= 0:
                tail = block[newline + 1 :] + tail
                end = start + newline + 1
                break
            tail = block + tail
            end = start
        if not tail:
            return
        try:
            with open(path + ".torn", "ab") as side:
                side.write(tail + b"\n")
                side.flush()
                os.fsync(side.fileno())
        except OSError as err:
            raise _naming(err, path + ".torn") from err
        f.truncate(end)


def _truncate_if(fd, start, length):
    """Cut the file back to ``start`` if nothing but our own partial write follows it."""
    try:
        size = os.fstat(fd).st_size
        if start < size <= start + length:
            os.ftruncate(fd, start)
    except OSError:
        pass


def _write_run_meta(run_dir, data):
    """Replace `run_dir`'s run.json with `data` atomically (temporary file, fsync, rename) and create an empty
    episodes file, so the directory is a run gigscope opens before the first step is written. Files are created
    with the user's umask (mkstemp's are private, 0600), so a teammate can open the run."""
    path = os.path.join(run_dir, RUN_META_FILE)
    _remove_abandoned_temporaries(run_dir)
    tmp = os.path.join(run_dir, f".run.json.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            raise _naming(err, path) from err
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(os.open(os.path.join(run_dir, EPISODES_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666))
    _fsync_dir(run_dir)


def _naming(err, path):
    """``err`` (a failed write, which names no file) as the same error naming ``path``."""
    if err.filename is not None:
        return err
    return OSError(err.errno, err.strerror, path)


def _remove_abandoned_temporaries(run_dir):
    """Remove the ``.run.json.<pid>.<hex>.tmp`` files of exporters killed before their rename (their process no
    longer runs)."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if not (name.startswith(".run.json.") and name.endswith(".tmp") and len(parts) == 6 and parts[3].isdigit()):
            continue
        pid = int(parts[3])
        if pid != os.getpid() and not _process_alive(pid):
            try:
                os.unlink(os.path.join(run_dir, name))
            except OSError:
                pass


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _now():
    return _datetime.datetime.now(_datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
