"""Test oracle: verl-agent's training-batch pipeline, from the rollout's output to the stored advantages.

Written from the semantics of verl-agent (langfengQ/verl-agent), not from its code:

- ``agent_system/multi_turn_rollout/rollout_loop.py``: ``gather_rollout_data`` keeps only active rows,
  trajectory by trajectory with steps in order, and gives every row its trajectory's ``episode_rewards``
  (the float32 sum of the active steps' rewards) and ``episode_lengths``.
- ``gigpo/core_gigpo.py``: ``compute_step_discounted_returns`` (per ``traj_uid``, in batch order, float32) runs
  before ``adjust_batch``; ``episode_norm_reward`` pools every row of a ``uid`` (mean 0 / std 1 for a pool of
  one); ``build_step_group`` groups rows of a ``uid`` by identical anchors, or greedily by
  ``SequenceMatcher(None, anchor, first_member).ratio() >= thresh`` visiting rows in batch order;
  ``step_norm_reward`` (a singleton group gets 0); A = A_E + w * A_S, broadcast over the response tokens.
- ``agent_system/multi_turn_rollout/utils.py``: ``adjust_batch`` (mode "copy") appends randomly chosen rows
  again until the batch size divides the micro-batch divisor — before the advantages are computed.
- ``verl/trainer/ppo/ray_trainer.py``: ``_balance_batch`` reorders rows into seqlen-balanced partitions;
  the reward manager (``agent_system/reward_manager/episode.py``) puts ``episode_rewards`` on the last valid
  response token; ``apply_invalid_action_penalty`` subtracts ``coef * (1 - is_action_valid)`` there and from
  ``step_rewards`` (not discounted); ``compute_advantage`` dispatches gigpo / grpo / rloo
  (``verl/trainer/ppo/core_algos.py``: GRPO's (s - mean) / (std + eps) unless ``norm_adv_by_std_in_grpo`` is
  false; RLOO's n/(n-1) * (s - mean), a pool of one keeping its score).

Tensors are numpy float32 here (torch float32 there), so results agree with the trainer's to float32
rounding; ``dtype=np.float64`` gives the same semantics in double precision (the exact values the trainer's
float32 arithmetic approximates).
"""

from collections import defaultdict
from difflib import SequenceMatcher

import numpy as np

EPSILON = 1e-6


class Batch:
    """A stand-in for verl's DataProto: ``batch`` (name → 2-D array or tensor) and ``non_tensor_batch``
    (name → 1-D numpy array of dtype object)."""

    def __init__(self, batch, non_tensor_batch, meta_info=None):
        self.batch = dict(batch)
        self.non_tensor_batch = dict(non_tensor_batch)
        self.meta_info = dict(meta_info or {})

    def __len__(self):
        return len(next(iter(self.non_tensor_batch.values())))

    def select_idxs(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        return Batch(
            {k: v[idx] for k, v in self.batch.items()},
            {k: v[idx] for k, v in self.non_tensor_batch.items()},
            self.meta_info,
        )

    def reorder(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        self.batch = {k: v[idx] for k, v in self.batch.items()}
        self.non_tensor_batch = {k: v[idx] for k, v in self.non_tensor_batch.items()}

    @staticmethod
    def concat(parts):
        keys = parts[0].batch.keys()
        nkeys = parts[0].non_tensor_batch.keys()
        return Batch(
            {k: np.concatenate([p.batch[k] for p in parts], axis=0) for k in keys},
            {k: np.concatenate([p.non_tensor_batch[k] for p in parts], axis=0) for k in nkeys},
            parts[0].meta_info,
        )


def objects(values):
    """A 1-D numpy array of dtype object (what verl's collate_fn makes of non-tensor values)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


# ----------------------------------------------------------------------------------------------------------
# The steps between the rollout and the advantages
# ----------------------------------------------------------------------------------------------------------


def step_discounted_returns(batch, gamma, dtype=np.float32):
    """Per trajectory, R_t = r_t + gamma * R_{t+1} over its rows in batch order."""
    rewards = batch.non_tensor_batch["rewards"].astype(dtype)
    traj = batch.non_tensor_batch["traj_uid"]
    active = batch.non_tensor_batch["active_masks"].astype(bool)
    out = np.zeros_like(rewards)
    for t in np.unique(traj):
        idx = np.where(traj == t)[0]
        assert active[idx].all(), "inactive rows must be gone before the returns are computed"
        running = dtype(0.0)
        for i in reversed(idx):
            running = dtype(rewards[i] + dtype(gamma) * running)
            out[i] = running
    return out


def adjust_batch(batch, divisor, rng):
    """mode "copy": append ``divisor - len % divisor`` distinct random rows again."""
    n = len(batch)
    remainder = n % divisor
    if remainder == 0:
        return batch
    dup = rng.choice(n, divisor - remainder, replace=False)
    return Batch.concat([batch, batch.select_idxs(dup)])


def balance_batch(batch, partitions):
    """Reorder into ``partitions`` partitions of equal size (verl's adjust_batch makes the batch divisible; here
    sizes may differ by one) and similar total sequence length (longest row first to the lightest partition
    with room), each partition's rows in their old order, partitions concatenated."""
    seqlen = batch.batch["attention_mask"].sum(-1)
    n = len(batch)
    sizes = [n // partitions + (k < n % partitions) for k in range(partitions)]
    parts = [[] for _ in range(partitions)]
    sums = [0] * partitions
    for i in sorted(range(n), key=lambda i: (-int(seqlen[i]), i)):
        k = min((k for k in range(partitions) if len(parts[k]) < sizes[k]), key=lambda k: (sums[k], k))
        parts[k].append(i)
        sums[k] += int(seqlen[i])
    order = [i for p in parts for i in sorted(p)]
    batch.reorder(order)
    return order


def response_mask(batch):
    r = batch.batch["responses"].shape[-1]
    return batch.batch["attention_mask"][:, -r:]


def episode_reward_scores(batch, dtype=np.float32):
    """token_level_scores: each row's episode reward on its last valid response token."""
    mask = batch.batch["response_mask"]
    scores = np.zeros(mask.shape, dtype=dtype)
    for i in range(len(batch)):
        last = int(mask[i].sum()) - 1
        scores[i, last] = dtype(batch.non_tensor_batch["episode_rewards"][i])
    return scores


def apply_invalid_action_penalty(batch, coef):
    mask = batch.batch["response_mask"]
    scores = batch.batch["token_level_scores"]
    dt = scores.dtype.type
    for i in range(len(batch)):
        invalid = dt(1.0 - float(batch.non_tensor_batch["is_action_valid"][i]))
        last = int(mask[i].sum()) - 1
        scores[i, last] = dt(scores[i, last] - dt(coef) * invalid)
        if "step_rewards" in batch.batch:
            batch.batch["step_rewards"][i] = dt(batch.batch["step_rewards"][i] - dt(coef) * invalid)


# ----------------------------------------------------------------------------------------------------------
# Advantages
# ----------------------------------------------------------------------------------------------------------


def _mean_std(values, dt):
    arr = np.asarray(values, dtype=dt)
    mean = dt(arr.mean(dtype=dt))
    std = dt(arr.std(ddof=1, dtype=dt)) if len(arr) > 1 else dt(np.nan)
    return mean, std


def episode_advantages(scores, index, remove_std):
    """Pool every row of an index; a pool of one has mean 0 and std 1."""
    dt = scores.dtype.type
    pools = defaultdict(list)
    for i, s in enumerate(scores):
        pools[index[i]].append(s)
    stats = {}
    for k, v in pools.items():
        stats[k] = (dt(0.0), dt(1.0)) if len(v) == 1 else _mean_std(v, dt)
    out = np.zeros(len(scores), dtype=dt)
    for i, s in enumerate(scores):
        mean, std = stats[index[i]]
        out[i] = (s - mean) if remove_std else (s - mean) / (std + dt(EPSILON))
    return out


def step_groups(anchors, index, similarity=None):
    """Each row's step-group label: (index, cluster number)."""
    labels = [None] * len(anchors)
    for idx in np.unique(index):
        rows = np.where(index == idx)[0]
        if similarity is None:
            seen = {}
            for i in rows:
                labels[i] = (idx, seen.setdefault(anchors[i], len(seen)))
        else:
            assert 0.0 < similarity < 1.0
            reps = []
            for i in rows:
                for c, rep in enumerate(reps):
                    if SequenceMatcher(None, anchors[i], rep).ratio() >= similarity:
                        labels[i] = (idx, c)
                        break
                else:
                    labels[i] = (idx, len(reps))
                    reps.append(anchors[i])
    return labels


def step_advantages(step_rewards, labels, remove_std):
    """A singleton step group has mean = its own value and std 1: advantage 0."""
    dt = step_rewards.dtype.type
    pools = defaultdict(list)
    for i, r in enumerate(step_rewards):
        pools[labels[i]].append(r)
    stats = {}
    for k, v in pools.items():
        stats[k] = (dt(v[0]), dt(1.0)) if len(v) == 1 else _mean_std(v, dt)
    out = np.zeros(len(step_rewards), dtype=dt)
    for i, r in enumerate(step_rewards):
        mean, std = stats[labels[i]]
        out[i] = (r - mean) if remove_std else (r - mean) / (std + dt(EPSILON))
    return out


def rloo_advantages(scores, index):
    dt = scores.dtype.type
    pools = defaultdict(list)
    for i, s in enumerate(scores):
        pools[index[i]].append(s)
    out = np.zeros(len(scores), dtype=dt)
    for i, s in enumerate(scores):
        n = len(pools[index[i]])
        if n > 1:
            mean = dt(np.asarray(pools[index[i]], dtype=dt).mean(dtype=dt))
            out[i] = s * dt(n / (n - 1)) - mean * dt(n / (n - 1))
        else:
            out[i] = s
    return out


def compute_advantage(batch, estimator, step_advantage_w=1.0, mode="mean_norm", similarity=None,
                      norm_adv_by_std_in_grpo=True):
    """batch.batch["advantages"] (= "returns"), per row broadcast over the response tokens. Returns the
    per-row values and, for GiGPO, the step-group labels."""
    scores = batch.batch["token_level_rewards"]
    dt = scores.dtype.type
    mask = batch.batch["response_mask"].astype(dt)
    scores = scores.sum(-1, dtype=dt)
    index = batch.non_tensor_batch["uid"]
    labels = None
    if estimator == "gigpo":
        remove_std = {"mean_norm": True, "mean_std_norm": False}[mode]
        a_e = episode_advantages(scores, index, remove_std)
        labels = step_groups(batch.non_tensor_batch["anchor_obs"], index, similarity)
        a_s = step_advantages(batch.batch["step_rewards"], labels, remove_std)
        per_row = (a_e + dt(step_advantage_w) * a_s).astype(dt)
    elif estimator == "grpo":
        per_row = episode_advantages(scores, index, remove_std=not norm_adv_by_std_in_grpo)
    elif estimator == "rloo":
        per_row = rloo_advantages(scores, index)
    else:
        raise ValueError(estimator)
    adv = per_row[:, None] * mask
    batch.batch["advantages"] = adv
    batch.batch["returns"] = adv
    return per_row, labels


def train_step(batch, cfg, rng, exporter=None):
    """Everything ray_trainer.fit does to the rollout's batch up to the stored advantages.

    ``cfg``: dict with estimator, gamma, step_advantage_w, mode, similarity (None for exact), invalid_coef
    (None: penalty off), size_divisor, balance_partitions (0: no balancing), norm_adv_by_std_in_grpo, dtype
    (np.float32 as the trainer, or np.float64).
    Returns the batch and a metrics dict like the trainer's.
    """
    if exporter is not None:
        exporter.mark_rows(batch)
    dtype = cfg.get("dtype", np.float32)
    if cfg["estimator"] == "gigpo":
        batch.batch["step_rewards"] = step_discounted_returns(batch, cfg["gamma"], dtype)
    batch = adjust_batch(batch, cfg.get("size_divisor", 1), rng)
    batch.batch["response_mask"] = response_mask(batch)
    if cfg.get("balance_partitions", 0):
        balance_batch(batch, cfg["balance_partitions"])
    batch.batch["token_level_scores"] = episode_reward_scores(batch, dtype)
    metrics = {}
    if cfg.get("invalid_coef") is not None:
        apply_invalid_action_penalty(batch, cfg["invalid_coef"])
        metrics["episode/valid_action_ratio"] = float(np.mean(batch.non_tensor_batch["is_action_valid"].astype(np.float32)))
    batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
    compute_advantage(
        batch,
        cfg["estimator"],
        step_advantage_w=cfg.get("step_advantage_w", 1.0),
        mode=cfg.get("mode", "mean_norm"),
        similarity=cfg.get("similarity"),
        norm_adv_by_std_in_grpo=cfg.get("norm_adv_by_std_in_grpo", True),
    )
    rewards = batch.non_tensor_batch["episode_rewards"].astype(np.float32)
    metrics.update(
        {
            "episode/reward/mean": float(rewards.mean()),
            "episode/reward/max": float(rewards.max()),
            "critic/advantages/mean": float(batch.batch["advantages"].sum() / batch.batch["response_mask"].sum()),
            "response_length/mean": float(batch.batch["response_mask"].sum(-1).mean()),
            "training/global_step": 0,
            "actor/pg_loss": np.float32(0.25),
            "actor/entropy_loss": np.float64("nan"),
            "timing_s/step": 1.5,
            "note": "not a number",
        }
    )
    return batch, metrics


def verl_config(cfg, env_name="webshop"):
    """The parts of a verl-agent trainer config the exporter reads, for ``cfg`` as in ``train_step``."""
    return {
        "algorithm": {
            "adv_estimator": cfg["estimator"],
            "gamma": cfg.get("gamma", 1.0),
            "lam": 1.0,
            "norm_adv_by_std_in_grpo": cfg.get("norm_adv_by_std_in_grpo", True),
            "use_kl_in_reward": False,
            "gigpo": {
                "step_advantage_w": cfg.get("step_advantage_w", 1.0),
                "mode": cfg.get("mode", "mean_norm"),
                "enable_similarity": cfg.get("similarity") is not None,
                "similarity_thresh": cfg.get("similarity") or 0.95,
            },
            "filter_groups": {"enable": False, "max_num_gen_batches": 10},
        },
        "actor_rollout_ref": {
            "actor": {
                "use_invalid_action_penalty": cfg.get("invalid_coef") is not None,
                "invalid_action_penalty_coef": cfg.get("invalid_coef") if cfg.get("invalid_coef") is not None else 0.1,
                "ppo_micro_batch_size_per_gpu": cfg.get("size_divisor", 1),
            },
        },
        "trainer": {
            "experiment_name": f"{cfg['estimator']}_{env_name}",
            "project_name": "verl_agent_" + env_name,
            "balance_batch": bool(cfg.get("balance_partitions", 0)),
            "n_gpus_per_node": max(1, cfg.get("balance_partitions", 0)),
            "nnodes": 1,
            "default_local_dir": "checkpoints/x",
        },
        "env": {
            "env_name": {"webshop": "Webshop", "alfworld": "alfworld/AlfredTWEnv"}.get(env_name, env_name),
            "max_steps": 15,
            "history_length": 2,
            "rollout": {"n": 4},
        },
    }
