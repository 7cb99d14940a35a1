"""The verl-agent exporter on a full disk at every fill level, and killed anywhere, checked with the real binary.

Disk-full: the exporter writes onto a small file system of its own (a tmpfs mounted for the test: it needs root,
as the test command has in CI, and fails saying so otherwise) left with ``k`` free pages, for every ``k`` from
none to more than the export needs (tmpfs counts space in pages, so every write that allocates fails at some
level). After each: no exception reached the trainer; a failed step was reported naming the file; no temporary
file is left; every line written is whole and one the export writes with room; ``validate`` finds nothing
wrong. Then the space is freed and the run reopened by a new exporter (a restarted trainer): its step is written
and the run validates.

Kill-anywhere: an exporter in a process of its own, writing steps, is killed with SIGKILL again and again at
pseudo-random moments (a fixed seed), each time reopened by the next. After each kill no complete line is lost
or changed and ``validate`` reports nothing but a torn tail; a reopening exporter cuts that tail into
``<file>.torn`` before appending, and leaves no temporary file of the killed one.
"""

import json
import os
import pickle
import random
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from gigscope.verl import RunExporter
from test_verl import Quiet, gigpo, gigscope_bin
from verl_agent_batches import WebShopLike, WordTokenizer, rollout
from verl_agent_oracle import train_step, verl_config

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = 4096
FILLER = ".filler"


class SmallFs:
    """A tmpfs mounted on ``path``, filled by a filler file so that exactly ``k`` pages are free."""

    def __init__(self, path, size):
        self.path = str(path)
        os.makedirs(self.path, exist_ok=True)
        out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", self.path], capture_output=True, text=True)
        assert out.returncode == 0, (
            f"the disk-full tests need a small file system of their own: `mount -t tmpfs` was refused "
            f"({out.stderr.strip()}); run them as root (as CI does) or under `unshare -rm`"
        )

    def close(self):
        subprocess.run(["umount", "-l", self.path], capture_output=True)

    def free_pages(self):
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize // PAGE

    def used_pages(self):
        st = os.statvfs(self.path)
        filler = os.path.join(self.path, FILLER)
        filled = -(-os.path.getsize(filler) // PAGE) if os.path.exists(filler) else 0
        return (st.f_blocks - st.f_bavail) * st.f_frsize // PAGE - filled

    def leave_free(self, pages):
        filler = os.path.join(self.path, FILLER)
        with open(filler, "ab", buffering=0) as f:
            for size in (64 * PAGE, PAGE):
                while True:
                    try:
                        f.write(b"\0" * size)
                    except OSError:
                        break
            length = os.fstat(f.fileno()).st_size
            os.ftruncate(f.fileno(), max(0, length // PAGE - pages) * PAGE)
        assert self.free_pages() == pages, f"{self.free_pages()} pages free, {pages} wanted"

    def free_all(self):
        os.unlink(os.path.join(self.path, FILLER))

    def clear(self):
        subprocess.run(["find", self.path, "-mindepth", "1", "-maxdepth", "1", "!", "-name", FILLER, "-exec", "rm", "-rf", "{}", "+"], check=True)


@pytest.fixture
def small_fs(tmp_path):
    fs = SmallFs(tmp_path / "fs", 4 << 20)
    yield fs
    fs.close()


def temporaries(root):
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names if ".tmp" in n]


def unexplained_problems(run):
    """``validate RUN``'s problems beyond what a kill in the middle of a line explains: the torn tail itself (an
    unfinished last line, said to be skipped while it was modified less than validate's two seconds ago, a torn
    tail after), and the partial group whose episode the torn line held (the run still ends in it, or a reopening
    exporter cut it into the side file ``episodes.jsonl.torn``)."""
    out = subprocess.run([gigscope_bin(), "validate", str(run)], capture_output=True, text=True, timeout=120)
    episodes = lines_of(run)
    torn = (episodes and not episodes.endswith(b"\n")) or os.path.exists(os.path.join(run, "episodes.jsonl.torn"))

    def explained(line):
        tail = "torn tail" in line or " is unfinished (" in line
        return tail or (torn and "partial (its writer stopped part-way)" in line)

    return [line for line in out.stderr.splitlines() if not explained(line)]


def lines_of(run, name="episodes.jsonl"):
    try:
        with open(os.path.join(run, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def steps(count, seed=5, tasks=3, n=4):
    """``count`` trained batches of ``tasks`` groups of ``n`` with their metrics, made once (the rows marked by
    a throwaway exporter)."""
    tokenizer = WordTokenizer()
    cfg = gigpo()
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as scratch:
        marker = RunExporter(os.path.join(scratch, "unused"), config=verl_config(cfg), tokenizer=tokenizer, log=Quiet())
        made = [train_step(rollout(WebShopLike, range(tasks), n, tokenizer, rng), cfg, rng, exporter=marker) for _ in range(count)]
    return tokenizer, verl_config(cfg), made


def test_the_exporter_on_a_full_disk_at_every_fill_level_reports_the_file_and_writes_again_once_freed(small_fs):
    tokenizer, config, made = steps(2, tasks=2, n=2)
    run = os.path.join(small_fs.path, "run")

    def export(batches, first_step, log):
        exporter = RunExporter(run, config=config, tokenizer=tokenizer, log=log)
        return [exporter.write_step(b, step=first_step + i, metrics=m) for i, (b, m) in enumerate(batches)]

    assert all(export(made[:1], 1, Quiet()))
    reference = set(lines_of(run).splitlines())
    need = small_fs.used_pages()
    for free in range(need + 2):
        what = f"{free} of {need} pages free"
        small_fs.clear()
        small_fs.leave_free(free)
        log = Quiet()
        written = export(made[:1], 1, log)  # never raises
        if not all(written):
            assert log.reports(), f"{what}: a failed step was not reported"
            assert f"No space left on device: '{run}{os.sep}" in log.reports()[0], f"{what}: names no file: {log.reports()}"
        assert not temporaries(small_fs.path), f"{what}: {temporaries(small_fs.path)}"
        text = lines_of(run)
        assert text == b"" or text.endswith(b"\n"), f"{what}: a torn line"
        assert set(text.splitlines()) <= reference, f"{what}: a line the export does not write"
        if any(os.path.exists(os.path.join(run, name)) for name in ("episodes.jsonl", "run.json")):
            assert unexplained_problems(run) == [], f"{what}: {unexplained_problems(run)}"
        small_fs.free_all()
        assert export(made[1:], 2, Quiet()) == [True], f"{what}, then freed: the reopened exporter failed"
        assert unexplained_problems(run) == [], f"{what}, then freed: {unexplained_problems(run)}"
        assert lines_of(run).startswith(text), f"{what}, then freed: lines lost"


CHILD = """
import os, pickle, sys
import numpy as np
sys.path[:0] = {paths!r}
from gigscope.verl import RunExporter
with open(sys.argv[2], "rb") as f:
    tokenizer, config, made = pickle.load(f)
exporter = RunExporter(sys.argv[1], config=config, tokenizer=tokenizer)
for step, (batch, metrics) in enumerate(made * int(sys.argv[3]), start=1):
    # A restarted trainer's trajectories are new ones: ids of their own.
    for key in ("uid", "traj_uid"):
        ids = batch.non_tensor_batch[key]
        batch.non_tensor_batch[key] = np.array([f"{{os.getpid()}}-{{step}}-{{u}}" for u in ids], dtype=object)
    assert exporter.write_step(batch, step=step, metrics=metrics)
    for key in ("uid", "traj_uid"):
        batch.non_tensor_batch[key] = np.array([u.split("-", 2)[2] for u in batch.non_tensor_batch[key]], dtype=object)
"""

KILLS = 40


def test_the_exporter_killed_anywhere_again_and_again_loses_no_line_and_its_reopening_cuts_the_torn_tail(tmp_path):
    run = str(tmp_path / "run")
    script = CHILD.format(paths=[os.path.dirname(os.path.dirname(HERE)), HERE])
    made = str(tmp_path / "steps.pickle")
    with open(made, "wb") as f:
        pickle.dump(steps(3), f)
    draw = random.Random(28)
    kept = b""
    for kill in range(KILLS):
        child = subprocess.Popen([sys.executable, "-c", script, run, made, "1000"], stderr=subprocess.DEVNULL)
        written = len(lines_of(run))
        if kill % 2 == 0:
            time.sleep(draw.uniform(0, 0.3))  # while Python and numpy load, while the first step is made
        else:
            deadline = time.monotonic() + 60
            while len(lines_of(run)) <= written and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(draw.uniform(0, 0.05))  # while steps are written
        child.send_signal(signal.SIGKILL)
        child.wait()
        now = lines_of(run)
        complete = kept[: kept.rfind(b"\n") + 1]
        assert now.startswith(complete), f"kill {kill}: complete lines lost or changed"
        if any(os.path.exists(os.path.join(run, name)) for name in ("episodes.jsonl", "run.json")):
            assert unexplained_problems(run) == [], f"kill {kill}: {unexplained_problems(run)}"
        kept = now
    assert kept.count(b"\n") > 12 * 5, "too few kills came after a step was written"
    last = subprocess.run([sys.executable, "-c", script, run, made, "1"], capture_output=True, text=True, timeout=300)
    assert last.returncode == 0, last.stderr
    now = lines_of(run)
    assert now.startswith(kept[: kept.rfind(b"\n") + 1]) and now.endswith(b"\n")
    out = subprocess.run([gigscope_bin(), "validate", run], capture_output=True, text=True, timeout=120)
    assert "torn tail        none" in out.stdout and "broken lines     0" in out.stdout, out.stdout + out.stderr
    for name in ("episodes.jsonl", "metrics.jsonl", os.path.join("tokens", "index.jsonl")):
        for line in lines_of(run, name).splitlines():
            json.loads(line)
    assert not temporaries(run), temporaries(run)


def test_a_reopening_exporter_cuts_a_torn_tail_into_a_side_file_instead_of_gluing_its_first_line_to_it(tmp_path):
    tokenizer, config, made = steps(2)
    run = str(tmp_path / "run")
    first = RunExporter(run, config=config, tokenizer=tokenizer, log=Quiet())
    assert first.write_step(made[0][0], step=1, metrics=made[0][1])
    whole = {name: lines_of(run, name) for name in ("episodes.jsonl", "metrics.jsonl", "tokens/index.jsonl")}
    torn = {name: text[: text.find(b"\n") // 2] for name, text in whole.items()}
    for name, tail in torn.items():
        with open(os.path.join(run, name), "ab") as f:
            f.write(tail)  # an append cut short by a kill
    again = RunExporter(run, config=config, tokenizer=tokenizer, log=Quiet())
    assert again.write_step(made[1][0], step=2, metrics=made[1][1])
    for name, text in whole.items():
        now = lines_of(run, name)
        assert now.startswith(text) and len(now) > len(text), name
        for line in now.splitlines():
            json.loads(line)  # no record glued to the torn one
        assert lines_of(run, name + ".torn") == torn[name] + b"\n", name
    out = subprocess.run([gigscope_bin(), "validate", run], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
