"""The installed package: the `gigscope` command the wheel puts on PATH is the command line (no Rust toolchain
involved), `import gigscope` comes from the installed package and loads neither the native extension nor
pyarrow until a run is opened. Run with the Python of the virtual environment the wheel was installed into
(the test command does), these check what `pip install` gave."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gigscope

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "gigscope"


def cargo_version():
    text = (ROOT / "Cargo.toml").read_text()
    return re.search(r'\[workspace\.package\][^\[]*?\nversion = "([^"]+)"', text).group(1)


def test_the_gigscope_command_is_the_command_line():
    assert SCRIPT.exists(), f"no gigscope command beside {sys.executable}"
    done = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for command in ("advantages", "stats", "convert", "validate", "train"):
        assert command in done.stdout
    version = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"gigscope {cargo_version()}"
    # A failing command's status comes back through the console script.
    missing = subprocess.run([str(SCRIPT), "stats", str(ROOT / "no-such-run")], capture_output=True, text=True)
    assert missing.returncode == 1
    assert "no-such-run" in missing.stderr


def test_the_command_prints_what_the_cargo_binary_prints():
    cargo_binary = os.environ.get("GIGSCOPE_CLI")
    if not cargo_binary:
        pytest.skip("GIGSCOPE_CLI names no cargo-built binary to compare with")
    for run in ("sample_runs/webshop-gigpo", "tests/fixtures/verl/v1"):
        args = ["advantages", str(ROOT / run), "--format", "csv", "--estimator", "rloo"]
        ours = subprocess.run([str(SCRIPT), *args], capture_output=True, check=True).stdout
        theirs = subprocess.run([cargo_binary, *args], capture_output=True, check=True).stdout
        assert ours == theirs and ours


def test_import_comes_from_the_installed_package_and_loads_nothing_native():
    assert Path(gigscope.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())
    assert (Path(gigscope.__file__).parent / "py.typed").exists()
    assert (Path(gigscope.__file__).parent / "_native.pyi").exists()
    probe = "import sys, gigscope; print('pyarrow' in sys.modules, 'gigscope._native' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
    # `python -m gigscope` is the same command.
    done = subprocess.run([sys.executable, "-m", "gigscope", "--version"], capture_output=True, text=True)
    assert done.stdout.strip() == f"gigscope {cargo_version()}"
