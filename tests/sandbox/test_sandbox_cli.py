"""`controller sandbox`: bad input is one line, exit 2, nothing started; exit codes pass."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def controller(*arguments: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller", "sandbox", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--fence", "landlock", "--workspace", "/nonexistent/ws"], "not an existing folder"),
        (["--fence", "landlock", "--read", "/nonexistent/ctx"], "does not exist"),
        (["--fence", "landlock", "--allow-tcp", "70000"], "out of range"),
        (["--fence", "landlock", "--allow-tcp", "http"], "needs a number"),
        (["--fence", "firejail"], "unknown fence"),
        (["--fence", "none"], "--unfenced"),
        (["--fence", "landlock", "--timeout", "-1"], "must be positive"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_starts_nothing(tmp_path, flags, message):
    if "--workspace" not in flags:
        flags = [*flags, "--workspace", str(tmp_path)]
    marker = tmp_path / "started"
    result = controller("run", *flags, "--", "touch", str(marker))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not marker.exists()


def test_unavailable_fence_is_refused_with_the_flag_to_pass(tmp_path):
    marker = tmp_path / "started"
    result = controller(
        "run",
        "--fence",
        "docker",
        "--workspace",
        str(tmp_path),
        "--",
        "touch",
        str(marker),
        env={"DOCKER_HOST": f"unix://{tmp_path}/none.sock"},
    )
    assert result.returncode == 2
    assert "--fence landlock" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not marker.exists()


def test_exit_code_and_output_pass_through(tmp_path):
    result = controller(
        "run",
        "--fence",
        "landlock",
        "--workspace",
        str(tmp_path),
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; echo made > made.txt; exit 7",
    )
    assert result.returncode == 7
    assert result.stdout == "out\n" and "err" in result.stderr
    assert (tmp_path / "made.txt").read_text() == "made\n"


def test_timeout_exits_124(tmp_path):
    result = controller(
        "run",
        "--fence",
        "landlock",
        "--workspace",
        str(tmp_path),
        "--timeout",
        "1",
        "--",
        "sleep",
        "60",
    )
    assert result.returncode == 124


def test_unfenced_prints_the_warning_first(tmp_path):
    result = controller(
        "run", "--fence", "none", "--unfenced", "--workspace", str(tmp_path), "--", "true"
    )
    assert result.returncode == 0
    assert result.stderr.startswith("WARNING: running UNFENCED")


def test_probe_json_lists_every_fence():
    result = controller("probe", "--json")
    assert result.returncode == 0, result.stderr
    probes = {probe["fence"]: probe for probe in json.loads(result.stdout)}
    assert set(probes) == {"landlock", "docker", "none"}
    assert probes["landlock"]["details"]["landlock_abi"].isdigit()
    assert probes["landlock"]["details"]["trial_run"] == "passed"


def test_probe_table_is_readable():
    result = controller("probe")
    assert result.returncode == 0
    assert result.stdout.splitlines()[0].split()[:2] == ["fence", "available"]
