"""`Run.render` against `gigscope render`: for the same request the API writes the very bytes the command
writes (an episode with a step selected, the overview, a size, a theme, advantage settings), and a request the
command refuses is refused with the command's message.

The command is $GIGSCOPE_CLI (the test command points it at the binary cargo built), else the `gigscope` that
the installed package puts beside this Python.
"""

import os
import subprocess
import warnings
from pathlib import Path

import pytest

import gigscope
from test_api import CLI, FIXTURES, SAMPLE_RUNS

TUI_RUN = FIXTURES / "tui" / "basic"


def cli_render(run_dir, *words):
    """Run `gigscope render RUN WORDS...`: None when it wrote its file, else its error message."""
    done = subprocess.run(
        [CLI, "render", os.fspath(run_dir), *words],
        capture_output=True,
        text=True,
        env={**os.environ, "GIGSCOPE_NO_CACHE": "1"},
    )
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        assert errors, done.stderr
        return errors[-1][len("error: ") :]
    return None


REQUESTS = [
    ("episode.svg", {"episode": "it0-g0-t1", "step": 1}, ["--episode=it0-g0-t1", "--step=1"]),
    ("overview.svg", {"overview": True}, ["--overview"]),
    (
        "overview.html",
        {"overview": True, "size": (80, 24), "theme": "light"},
        ["--overview", "--size=80x24", "--theme=light"],
    ),
    ("wide.html", {"episode": "it1-g0-t0", "size": "160x45"}, ["--episode=it1-g0-t0", "--size=160x45"]),
    (
        "grpo.svg",
        {"overview": True, "estimator": "grpo", "omega": 0.5},
        ["--overview", "--estimator=grpo", "--omega=0.5"],
    ),
]


@pytest.mark.parametrize("name,keywords,flags", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_the_file_written_is_the_commands(tmp_path, name, keywords, flags):
    run = gigscope.open(TUI_RUN)
    (tmp_path / "api").mkdir()
    (tmp_path / "cli").mkdir()
    assert cli_render(run.path, f"--out={tmp_path / 'cli' / name}", *flags) is None
    assert run.render(tmp_path / "api" / name, **keywords) is None
    written = (tmp_path / "api" / name).read_bytes()
    assert written == (tmp_path / "cli" / name).read_bytes()
    assert written.lstrip().startswith(b"<?xml" if name.endswith(".svg") else b"<!DOCTYPE html>")


def test_a_run_opened_with_source_flags_is_drawn_as_read(tmp_path):
    run_dir = FIXTURES / "trl" / "batch_weights"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = gigscope.open(run_dir, source="trl", group_size=4)
    assert cli_render(run.path, f"--out={tmp_path / 'cli.svg'}", "--overview", "--from=trl", "--group-size=4") is None
    run.render(tmp_path / "api.svg", overview=True)
    assert (tmp_path / "api.svg").read_bytes() == (tmp_path / "cli.svg").read_bytes()


REFUSED = [
    ({"episode": "no-such-episode"}, ["--episode=no-such-episode"], "x.svg"),
    ({"episode": "it0-g0-t1", "step": 99}, ["--episode=it0-g0-t1", "--step=99"], "x.svg"),
    ({"overview": True}, ["--overview"], "x.png"),
    ({"overview": True, "size": (40, 10)}, ["--overview", "--size=40x10"], "x.svg"),
    ({"overview": True, "gamma": 2.0}, ["--overview", "--gamma=2.0"], "x.svg"),
]


@pytest.mark.parametrize("keywords,flags,name", REFUSED, ids=[str(r[0]) for r in REFUSED])
def test_a_refused_request_is_an_exception_with_the_commands_message(tmp_path, keywords, flags, name):
    run = gigscope.open(TUI_RUN)
    message = cli_render(run.path, f"--out={tmp_path / name}", *flags)
    assert message is not None
    with pytest.raises(gigscope.GigscopeError) as refused:
        run.render(tmp_path / name, **keywords)
    assert str(refused.value) == message
    assert not (tmp_path / name).exists()


def test_a_keyword_no_flag_has_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="--no-such-setting"):
        gigscope.open(SAMPLE_RUNS / "webshop-gigpo").render(tmp_path / "x.svg", overview=True, no_such_setting=1)
