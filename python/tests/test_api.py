"""The Python API against the command line it wraps: on every directory of the fixtures and the sample runs,
`gigscope.open(DIR).advantages(**settings)` holds exactly the rows of `gigscope advantages DIR FLAGS --format
jsonl` (same columns, same order, same doubles), and a directory the command refuses is refused by the API with
the command's message.

The command is $GIGSCOPE_CLI (the test command points it at the binary cargo built), else the `gigscope` that
the installed package puts beside this Python.
"""

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import gigscope

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_RUNS = ROOT / "sample_runs"
FIXTURES = ROOT / "tests" / "fixtures"


def cli_path():
    explicit = os.environ.get("GIGSCOPE_CLI")
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "gigscope"
    return str(beside) if beside.exists() else shutil.which("gigscope")


CLI = cli_path()


def every_directory():
    """Every directory of the fixtures and sample runs (runs of each layout, their parents, broken ones)."""
    dirs = []
    for top in (SAMPLE_RUNS, FIXTURES):
        dirs.append(top)
        dirs.extend(sorted(p for p in top.rglob("*") if p.is_dir()))
    return dirs


def cli_rows(run_dir, *flags):
    """(rows, None) from `gigscope advantages --format jsonl`, or (None, message) when it fails."""
    done = subprocess.run(
        [CLI, "advantages", str(run_dir), *flags, "--format", "jsonl"],
        capture_output=True,
        text=True,
        env={**os.environ, "GIGSCOPE_NO_CACHE": "1"},
    )
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        assert errors, done.stderr
        return None, errors[-1][len("error: ") :]
    return [json.loads(line) for line in done.stdout.splitlines()], None


def same_value(api, cli):
    # JSON has no NaN: serde_json writes null where the engine has NaN; null where there is no number (an
    # unscored completion's reward, a run without stored advantages) is null (None) in the table too.
    if cli is None:
        return api is None or (isinstance(api, float) and math.isnan(api))
    return type(api) is type(cli) and api == cli


def assert_same_rows(table, rows):
    assert isinstance(table, pa.Table)
    api_rows = table.to_pylist()
    assert len(api_rows) == len(rows)
    for api_row, cli_row in zip(api_rows, rows):
        assert list(api_row) == list(cli_row)
        for key, cli_value in cli_row.items():
            assert same_value(api_row[key], cli_value), (key, api_row, cli_row)


def relative(path):
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("run_dir", every_directory(), ids=relative)
def test_advantages_equal_the_command_lines_on_every_fixture(run_dir):
    rows, message = cli_rows(run_dir)
    if rows is None:
        with pytest.raises(gigscope.GigscopeError) as refused:
            gigscope.open(run_dir).advantages()
        assert str(refused.value) == message
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = gigscope.open(run_dir)
    assert_same_rows(run.advantages(), rows)


SETTINGS = [
    {"estimator": "grpo"},
    {"estimator": "rloo"},
    {"estimator": "gigpo", "gamma": 0.9, "omega": 0.5, "norm": "mean-std-norm"},
    {"pooling": "trajectories", "invalid_penalty": 0.25},
    {"similarity": 0.8},
    {"anchor": "page"},
    {"anchor": "step"},
    {"anchor": "state"},
    {"success_reward": True, "efficiency_alpha1": 0.5, "efficiency_alpha2": 0.25},
    {"estimator": "hgpo", "hgpo_history": 1},
    {"estimator": "graphgpo", "graph_gamma": 0.5},
    {"estimator": "proxmo", "proxmo_psc": False},
    {"estimator": "soft-page"},
    {"estimator": "q-minus-v", "q_minus_v_episode": True},
]


def as_flags(settings):
    return [
        f"--{k.replace('_', '-')}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items()
    ]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
@pytest.mark.parametrize("run_dir", [SAMPLE_RUNS / "webshop-gigpo", SAMPLE_RUNS / "sokoban-gigpo"], ids=relative)
def test_advantages_under_every_setting_equal_the_command_lines(run_dir, settings):
    rows, message = cli_rows(run_dir, *as_flags(settings))
    run = gigscope.open(run_dir)
    if rows is None:
        with pytest.raises(gigscope.GigscopeError) as refused:
            run.advantages(**settings)
        assert str(refused.value) == message
        return
    assert_same_rows(run.advantages(**settings), rows)


TRL_SETTINGS = [
    {},
    {"scale_rewards": "batch"},
    {"scale_rewards": "none", "reward_weights": [1.0, 0.5]},
    {"aggregation": "normalize-then-sum", "reward_weights": [0.5, 2.0]},
]


@pytest.mark.parametrize("settings", TRL_SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
@pytest.mark.parametrize(
    "run_dir,group_size", [(FIXTURES / "trl" / "default", None), (FIXTURES / "trl" / "batch_weights", 4)], ids=str
)
def test_trl_settings_and_source_flags_equal_the_command_lines(run_dir, group_size, settings):
    flags = ["--from=trl"] + ([f"--group-size={group_size}"] if group_size else [])
    words = flags + [
        f"--{k.replace('_', '-')}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in settings.items()
    ]
    rows, message = cli_rows(run_dir, *words)
    run = gigscope.open(run_dir, source="trl", group_size=group_size)
    assert run.layout == "TRL completions log"
    if rows is None:
        with pytest.raises(gigscope.GigscopeError) as refused:
            run.advantages(**settings)
        assert str(refused.value) == message
        return
    assert_same_rows(run.advantages(**settings), rows)


def test_episodes_steps_and_groups_describe_the_run():
    run = gigscope.open(SAMPLE_RUNS / "webshop-gigpo")
    episodes = run.episodes()
    steps = run.steps()
    advantages = run.advantages()
    assert episodes.num_rows == len(run) > 0
    assert steps.num_rows == advantages.num_rows == sum(episodes.column("steps").to_pylist())
    assert steps.column("reward").to_pylist() == advantages.column("reward").to_pylist()
    assert steps.column("episode").to_pylist() == advantages.column("episode").to_pylist()
    groups = run.groups()
    assert sorted(groups.column("group").to_pylist()) == sorted(set(episodes.column("group").to_pylist()))
    assert sum(groups.column("episodes").to_pylist()) == episodes.num_rows
    stats = run.stats(estimator="grpo")
    assert stats["episodes"] == episodes.num_rows
    assert [g["name"] for g in stats["groups"]] == groups.column("group").to_pylist()
    # No truth files in the sample run: empty tables with the columns.
    assert run.truth().num_rows == 0
    assert "a_star" in run.truth().column_names
    assert run.truth_agreements().column_names[:2] == ["iteration", "estimator"]


def test_stats_equal_the_command_lines():
    run_dir = SAMPLE_RUNS / "sokoban-gigpo"
    done = subprocess.run(
        [CLI, "stats", str(run_dir), "--json", "--omega=0.5"], capture_output=True, text=True, check=True
    )
    assert gigscope.open(run_dir).stats(omega=0.5) == json.loads(done.stdout)


def test_truth_files_are_read_into_tables(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE_RUNS / "webshop-gigpo", run_dir)
    run = gigscope.open(run_dir)
    episode = run.episodes().slice(0, 1).to_pylist()[0]
    name = json.loads((run_dir / "run.json").read_text()).get("name") or run_dir.name
    lines = [
        {
            "kind": "header",
            "format": "gigscope-truth/1",
            "run": name,
            "iteration": episode["iteration"],
            "rollouts": 4,
            "seed": 7,
            "groups": [episode["group"]],
            "groups_in_iteration": 1,
            "gamma": 0.95,
            "success_reward": False,
            "invalid_penalty": 0.1,
            "env": "webshop",
        },
        {
            "kind": "row",
            "run": name,
            "episode": episode["episode"],
            "step": 0,
            "group": episode["group"],
            "q": 0.5,
            "v": 0.25,
            "a_star": 0.25,
            "q_se": 0.1,
            "v_se": 0.05,
            "k": 4,
        },
        {"kind": "agreement", "estimator": "gigpo", "states": 1, "spearman": None, "sign_agreement": 1.0,
         "scale": 0.5, "rmse": 0.0},
    ]
    (run_dir / "truth").mkdir()
    path = run_dir / "truth" / f"iteration-{episode['iteration']}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    truth = run.truth().to_pylist()
    assert truth == [{"iteration": episode["iteration"], **{k: v for k, v in lines[1].items() if k not in ("kind", "run")}}]
    agreements = run.truth_agreements().to_pylist()
    assert agreements == [
        {"iteration": episode["iteration"], "estimator": "gigpo", "states": 1, "spearman": None,
         "sign_agreement": 1.0, "scale": 0.5, "rmse": 0.0, "error": None}
    ]
    # A broken line is an error naming the file and the line.
    path.write_text(json.dumps(lines[0]) + "\n{not json\n")
    with pytest.raises(gigscope.GigscopeError, match=r"iteration-\d+\.jsonl.*2"):
        run.truth()


def test_errors_are_exceptions_carrying_the_readers_message(tmp_path):
    with pytest.raises(gigscope.GigscopeError, match="does-not-exist"):
        gigscope.open(tmp_path / "does-not-exist")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "episodes.jsonl").write_text((SAMPLE_RUNS / "webshop-gigpo" / "episodes.jsonl").read_text())
    (broken / "run.json").write_text('{"format": "gigscope-run/1",\n  "name": }\n')
    # run.json is optional: a damaged one is read as absent, with a warning naming the file and the line, as
    # every command of the CLI does.
    with pytest.warns(UserWarning, match=r"run\.json.*line 2.*read without it"):
        damaged = gigscope.open(broken)
    assert len(damaged) == len(gigscope.open(SAMPLE_RUNS / "webshop-gigpo"))
    run = gigscope.open(SAMPLE_RUNS / "webshop-gigpo")
    with pytest.raises(gigscope.GigscopeError, match="gamma"):
        run.advantages(gamma="a lot")
    with pytest.raises(gigscope.GigscopeError, match="estimator"):
        run.advantages(estimator="ppo")
    with pytest.raises(TypeError, match="no-such-setting"):
        run.advantages(no_such_setting=1)
    with pytest.raises(gigscope.GigscopeError, match="--similarity"):
        run.advantages(anchor="exact", similarity=0.5)


def test_broken_lines_are_warnings_naming_file_and_line():
    broken = FIXTURES / "tui" / "broken"
    with pytest.warns(UserWarning, match=r"skipped \d+ broken line\(s\).*line \d+"):
        run = gigscope.open(broken)
    assert len(run) > 0


def write_token_store(run_dir, episode, steps):
    """A token store written byte for byte as docs/run-format.md lays it out (not by gigscope's writer):
    ``steps`` is ``[(step, ids, texts, mask, {channel: values})]``, ``None`` a null value or an unknown id."""
    store = run_dir / "tokens"
    store.mkdir()
    chunk, index = bytearray(), []

    def bitmap(bits):
        out = bytearray((len(bits) + 7) // 8)
        for i, bit in enumerate(bits):
            out[i // 8] |= int(bit) << (i % 8)
        return bytes(out)

    for step, ids, texts, mask, channels in steps:
        n, offset = len(ids), len(chunk)
        text = b"".join((t or "").encode() for t in texts)
        ends, end = [], 0
        for t in texts:
            end += len((t or "").encode())
            ends.append(end)
        chunk += struct.pack(f"<{n}i", *ids) + bytes(mask) + bitmap([t is not None for t in texts])
        chunk += struct.pack(f"<{n}I", *ends) + text
        for values in channels.values():
            chunk += bitmap([v is not None for v in values])
            chunk += struct.pack(f"<{n}f", *[0.0 if v is None else v for v in values])
        index.append(
            {
                "episode": episode,
                "step": step,
                "iteration": 0,
                "chunk": "it0.bin",
                "offset": offset,
                "length": len(chunk) - offset,
                "tokens": n,
                "text_bytes": len(text),
                "channels": list(channels),
            }
        )
    (store / "it0.bin").write_bytes(bytes(chunk))
    (store / "index.jsonl").write_text("".join(json.dumps(line) + "\n" for line in index))


def test_token_tables_equal_the_command_lines_rows(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURES / "tui" / "basic", run_dir)
    nan = float("nan")
    write_token_store(
        run_dir,
        "it0-socks-t1",
        [
            (
                0,
                [11, 12, -1, 14],
                ["search", "[é", None, "]\n"],
                [1, 1, 1, 0],
                {
                    "advantage": [1.5, 0.0, None, 0.1],
                    "old_logprob": [-0.1, -0.2, nan, -3.25],
                    "rollout_logprob": [-0.15, None, -0.5, -3.0],
                    "ref_logprob": [-0.3, -0.2, -0.5, -40.0],
                    "clipped": [0.0, 1.0, None, 0.0],
                },
            ),
            (2, [7], ["buy"], [1], {"entropy": [0.7], "ratio": [1.25]}),
        ],
    )
    run = gigscope.open(run_dir)
    for step in (None, 0, 2):
        flags = [] if step is None else ["--step", str(step)]
        done = subprocess.run(
            [CLI, "tokens", str(run_dir), "--episode", "it0-socks-t1", *flags, "--format", "jsonl"],
            capture_output=True,
            text=True,
            check=True,
        )
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        table = run.tokens("it0-socks-t1", step=step)
        assert table.column_names == list(rows[0])
        assert table.num_rows == len(rows) == (5 if step is None else 4 if step == 0 else 1)
        for column in table.column_names[6:]:
            expected = pa.bool_() if column == "clipped" else pa.float32()
            assert table.schema.field(column).type == expected, column
        floats = [c for c in table.column_names[6:] if c != "clipped"]
        for api_row, cli_row in zip(table.to_pylist(), rows):
            for key, cli_value in cli_row.items():
                api_value = api_row[key]
                if key in floats and cli_value is not None:
                    # The command line writes a float32's shortest text ("NaN" for NaN): read back as float32,
                    # the same value.
                    want = struct.unpack("<f", struct.pack("<f", float(cli_value)))[0]
                    assert api_value == want or math.isnan(api_value) and math.isnan(want), (key, api_row, cli_row)
                else:
                    assert api_value == cli_value and type(api_value) is type(cli_value), (key, api_row, cli_row)
    first = run.tokens("it0-socks-t1", step=0).to_pylist()
    # Nulls stay nulls, never 0: a channel not recorded, a value not recorded, an unknown id's text.
    assert first[0]["entropy"] is None and first[2]["advantage"] is None and first[2]["text"] is None
    assert first[1]["advantage"] == 0.0 and first[1]["effective_weight"] == 0.0 and first[1]["clipped"] is True
    with pytest.raises(gigscope.GigscopeError, match="no tokens recorded for episode \"it0-hat-t0\""):
        run.tokens("it0-hat-t0")
    with pytest.raises(gigscope.GigscopeError, match="step 1"):
        run.tokens("it0-socks-t1", step=1)
