"""The verl-agent exporter's token store, read back with the real gigscope binary (`gigscope tokens`).

A batch built as verl-agent builds it, given per-token channels, is exported; `gigscope tokens` must print
exactly the float32 values it was given, with null for the channels the batch lacked.
"""

import json
import os
import stat
import subprocess

import numpy as np
import pytest

from gigscope.verl import ROW_KEY, RunExporter
from test_verl import Quiet, episodes, gigpo, gigscope_bin
from verl_agent_batches import WebShopLike, WordTokenizer, rollout
from verl_agent_oracle import train_step, verl_config

CHANNELS = ("advantage", "old_logprob", "rollout_logprob", "ref_logprob", "entropy", "ratio", "clipped")


def tokens(run, episode, *flags, ok=True):
    out = subprocess.run(
        [gigscope_bin(), "tokens", run, "--episode", episode, "--format", "jsonl", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if ok:
        assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()], out


def trained_batch(seed=3, tasks=3):
    tokenizer = WordTokenizer()
    cfg = gigpo()
    rng = np.random.default_rng(seed)
    exporter_cfg = verl_config(cfg)
    batch = rollout(WebShopLike, range(tasks), 4, tokenizer, rng)
    return tokenizer, cfg, exporter_cfg, batch, rng


def rows_by_episode(batch):
    """Each trajectory's rows in step order, as the exporter orders them (marks, copies dropped)."""
    marks = [int(m) for m in batch.non_tensor_batch[ROW_KEY]]
    active = batch.non_tensor_batch.get("active_masks")
    first = {}
    for i, m in enumerate(marks):
        first.setdefault(m, i)
    rows = {}
    for m in sorted(first):
        i = first[m]
        if active is not None and not bool(active[i]):
            continue
        rows.setdefault(str(batch.non_tensor_batch["traj_uid"][i]), []).append(i)
    return rows


def test_exported_tokens_read_back_exactly_with_nulls_for_missing_channels(tmp_path):
    tokenizer, cfg, config, batch, rng = trained_batch()
    run = tmp_path / "run"
    log = Quiet()
    exporter = RunExporter(run, config=config, tokenizer=tokenizer, log=log)
    batch, metrics = train_step(batch, cfg, rng, exporter=exporter)
    shape = batch.batch["responses"].shape
    old = rng.normal(-2.0, 1.0, shape).astype(np.float32)
    ref = (old + rng.normal(0.0, 0.1, shape)).astype(np.float32)
    old[0, 0] = np.nan  # a real NaN is a value, not a null
    batch.batch["old_log_probs"] = old
    batch.batch["ref_log_prob"] = ref
    assert exporter.write_step(batch, step=7, metrics=metrics), log.getvalue()

    by_traj = rows_by_episode(batch)
    eps = episodes(run)
    assert eps and sum(len(e["steps"]) for e in eps) == sum(len(r) for r in by_traj.values())
    attention = batch.batch["attention_mask"][:, -shape[1]:].astype(bool)
    checked = 0
    for e in eps:
        rows, _ = tokens(run, e["id"])
        idx = by_traj[e["traj_uid"]]
        assert sorted({r["step"] for r in rows}) == list(range(len(idx)))
        for k, i in enumerate(idx):
            mine = [r for r in rows if r["step"] == k]
            keep = np.flatnonzero(attention[i])
            assert [r["index"] for r in mine] == list(range(len(keep)))
            offset = 0
            for r, t in zip(mine, keep):
                token_id = int(batch.batch["responses"][i, t])
                assert r["id"] == token_id
                assert r["text"] == tokenizer.decode([token_id], skip_special_tokens=False)
                assert r["offset"] == offset
                offset += len(r["text"].encode("utf-8"))
                assert r["mask"] == int(batch.batch["response_mask"][i, t])
                assert np.float32(r["advantage"]) == batch.batch["advantages"][i, t]
                if np.isnan(old[i, t]):
                    assert r["old_logprob"] == "NaN"
                else:
                    assert np.float32(r["old_logprob"]) == old[i, t]
                    assert np.float32(r["kl_k1"]) == np.float32(old[i, t] - ref[i, t])
                assert np.float32(r["ref_logprob"]) == ref[i, t]
                for absent in ("rollout_logprob", "entropy", "ratio", "clipped", "mismatch", "mismatch_weight"):
                    assert r[absent] is None, (absent, r)
                weight = batch.batch["advantages"][i, t] if r["mask"] else 0.0
                assert np.float32(r["effective_weight"]) == np.float32(weight)
                checked += 1
    assert checked > 100
    assert list(rows[0].keys())[:8] == ["step", "index", "id", "text", "offset", "mask", "advantage", "old_logprob"]


def test_a_channel_of_the_wrong_shape_and_unknown_ids_are_null_and_said_once(tmp_path):
    tokenizer, cfg, config, batch, rng = trained_batch(seed=5, tasks=2)
    run = tmp_path / "run"
    log = Quiet()
    exporter = RunExporter(run, config=config, tokenizer=tokenizer, log=log)
    batch, metrics = train_step(batch, cfg, rng, exporter=exporter)
    shape = batch.batch["responses"].shape
    batch.batch["entropys"] = np.ones((shape[0], shape[1] - 1), dtype=np.float32)
    batch.batch["rollout_log_probs"] = np.full(shape, -0.5, dtype=np.float32)
    first_trained = np.flatnonzero(batch.batch["response_mask"][0])[0]
    batch.batch["responses"][0, first_trained] = 10**6
    assert exporter.write_step(batch, step=1, metrics=metrics)
    reports = log.reports()
    assert any("batch['entropys'] has shape" in r for r in reports), reports
    assert any("ids the tokenizer does not know (e.g. id 1000000" in r for r in reports), reports
    unknown = [
        r for e in episodes(run) for r in tokens(run, e["id"])[0] if r["id"] == 10**6
    ]
    assert len(unknown) == 1 and unknown[0]["text"] is None
    assert unknown[0]["entropy"] is None and unknown[0]["rollout_logprob"] == -0.5


def test_a_cut_chunk_names_the_file_and_record_and_the_rest_still_reads(tmp_path):
    tokenizer, cfg, config, batch, rng = trained_batch(seed=9, tasks=2)
    run = tmp_path / "run"
    exporter = RunExporter(run, config=config, tokenizer=tokenizer, log=Quiet())
    batch, metrics = train_step(batch, cfg, rng, exporter=exporter)
    assert exporter.write_step(batch, step=2, metrics=metrics)
    index = [json.loads(line) for line in open(run / "tokens" / "index.jsonl")]
    last = index[-1]
    # Each line counts its record's trained tokens (mask 1): the response length DEPO's term reads.
    assert all(0 < line["trained"] <= line["tokens"] for line in index)
    whole, _ = tokens(run, last["episode"], "--step", str(last["step"]))
    assert sum(r["mask"] for r in whole) == last["trained"]
    chunk = run / "tokens" / last["chunk"]
    with open(chunk, "r+b") as f:
        f.truncate(last["offset"] + last["length"] - 3)
    # A torn index line (a writer mid-append) is waited for, not reported.
    with open(run / "tokens" / "index.jsonl", "a") as f:
        f.write('{"episode": "half')
    rows, out = tokens(run, last["episode"], ok=False)
    assert out.returncode == 1
    assert f"{chunk}" in out.stderr and f"episode {last['episode']!r}".replace("'", '"') in out.stderr
    assert f"step {last['step']}" in out.stderr and "the chunk is cut" in out.stderr
    assert "warning" not in out.stderr, "a torn last index line is not an error"
    assert {r["step"] for r in rows} == {e["step"] for e in index if e["episode"] == last["episode"]} - {last["step"]}


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_files_are_written_with_the_users_umask(tmp_path, umask):
    tokenizer, cfg, config, batch, rng = trained_batch(seed=1, tasks=1)
    old = os.umask(umask)
    try:
        run = tmp_path / "run"
        exporter = RunExporter(run, config=config, tokenizer=tokenizer, log=Quiet())
        batch, metrics = train_step(batch, cfg, rng, exporter=exporter)
        assert exporter.write_step(batch, step=1, metrics=metrics)
    finally:
        os.umask(old)
    files = ["run.json", "episodes.jsonl", "metrics.jsonl", "tokens/index.jsonl", "tokens/step-000001.bin"]
    for name in files:
        mode = stat.S_IMODE(os.stat(run / name).st_mode)
        assert mode == 0o666 & ~umask, (name, oct(mode))


def test_a_plain_verl_grpo_batch_without_trajectories_exports_one_step_episodes(tmp_path):
    tokenizer, cfg, config, batch, rng = trained_batch(seed=4, tasks=2)
    run = tmp_path / "run"
    exporter = RunExporter(run, config=config, tokenizer=tokenizer, log=Quiet())
    batch, metrics = train_step(batch, cfg, rng, exporter=exporter)
    del batch.non_tensor_batch["traj_uid"]
    assert exporter.write_step(batch, step=1, metrics=metrics), exporter.last_error
    eps = episodes(run)
    assert eps and all(len(e["steps"]) == 1 and e["id"].startswith(e["uid"] + "/") for e in eps)
    assert len({e["id"] for e in eps}) == len(eps)
    rows, _ = tokens(run, eps[0]["id"])
    assert rows and all(r["step"] == 0 for r in rows)
