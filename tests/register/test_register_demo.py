"""`controller register demo`: the scripted gelu_tanh session on a scratch copy of the example
target, under Landlock: attempt 1 forgets a call site, attempt 2 is branched."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_claims import command, demo_gate_count  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_demo_registers_gelu_tanh_in_a_scratch_copy(tmp_path, fence_arguments):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller",
            *command("register demo"),
            *fence_arguments,
            "--runs-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "controller: branch controller/register/gelu_tanh/register-" in result.stdout
    (run,) = tmp_path.glob("register-*")
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    checked = [e for e in events if e["kind"] == "verdicts"]
    assert [e["passed"] for e in checked] == [False, True]
    # the README's claims: attempt 2 passes all N gates; the console names the evidence
    assert len(checked[1]["gates"]) == demo_gate_count() and all(checked[1]["gates"].values())
    assert "evidence/report.md" in result.stderr and "evidence/report.html" in result.stderr
    failed = {gate for gate, passed in checked[0]["gates"].items() if not passed}
    assert failed == {"structure", "registry_hits"}
    (scratch,) = tmp_path.glob("demo-target-*")
    branch = json.loads((run / "publish.json").read_text())["branch"]
    changed = subprocess.run(
        ["git", "-C", str(scratch), "diff", "--name-only", f"{branch}^", branch],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert changed == [
        "examples/vision.py",
        "operators/catalog/__init__.py",
        "operators/catalog/gelu_tanh.py",
        "tests/registry/test_gelu_tanh.py",
    ]
    assert (
        "controller/register"
        not in subprocess.run(
            ["git", "-C", str(REPO), "branch", "--list", "controller/*"],
            capture_output=True,
            text=True,
        ).stdout
    )
