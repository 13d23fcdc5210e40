"""The fenced tools: each call runs inside the fence, which refuses what the policy denies."""

from __future__ import annotations

import os
import shutil

import pytest

from controller.agents.tools import OUTPUT_LIMIT, FencedTools, truncate
from sandbox.fence import get_fence


@pytest.fixture
def tools(make_session):
    return FencedTools(make_session())


def test_write_read_edit_list_in_the_workspace(tools, workspace):
    assert tools.call("write", {"path": "pkg/mod.py", "content": "x = 1\ny = 2\n"}).ok
    assert tools.call("read", {"path": "pkg/mod.py"}).output == "x = 1\ny = 2\n"
    assert tools.call("edit", {"path": "pkg/mod.py", "old": "y = 2", "new": "y = 3"}).ok
    assert (workspace / "pkg" / "mod.py").read_text() == "x = 1\ny = 3\n"
    listing = tools.call("list", {}).output.splitlines()
    assert "pkg/" in listing and "kernel.py" in listing
    assert [event.name for event in tools.events] == ["write", "read", "edit", "list"]


def test_edit_refuses_a_missing_or_ambiguous_match(tools, workspace):
    (workspace / "twice.py").write_text("a = 0\na = 0\n")
    missing = tools.call("edit", {"path": "twice.py", "old": "b = 0", "new": "b = 1"})
    ambiguous = tools.call("edit", {"path": "twice.py", "old": "a = 0", "new": "a = 1"})
    assert not missing.ok and "not found" in missing.output
    assert not ambiguous.ok and "found 2 times" in ambiguous.output
    assert (workspace / "twice.py").read_text() == "a = 0\na = 0\n"


def test_bash_runs_in_the_workspace_and_reports_the_exit_code(tools):
    ran = tools.call("bash", {"command": "pwd; echo oops >&2; exit 3"})
    assert not ran.ok
    assert "exit code 3" in ran.output and "oops" in ran.output and "workspace" in ran.output


def test_write_outside_the_workspace_is_refused_by_the_fence(tools, tmp_path):
    outside = tmp_path / "outside.txt"
    written = tools.call("write", {"path": str(outside), "content": "escaped"})
    shell = tools.call("bash", {"command": f"echo escaped > {outside}"})
    assert not written.ok and "Permission" in written.output
    assert not shell.ok
    assert not outside.exists()


def test_planted_symlink_cannot_reach_outside(tools, workspace, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    os.symlink(secret, workspace / "link.txt")
    read = tools.call("read", {"path": "link.txt"})
    written = tools.call("write", {"path": "link.txt", "content": "overwritten"})
    assert not read.ok and "do not read" not in read.output
    assert not written.ok
    assert secret.read_text() == "do not read"
    assert "link.txt@" in tools.call("list", {}).output


def test_unfenced_tools_do_reach_outside(workspace, tmp_path, make_session):
    outside = tmp_path / "outside.txt"
    session = make_session().model_copy(update={"fence": get_fence("none", unfenced=True)})
    assert FencedTools(session).call("write", {"path": str(outside), "content": "x"}).ok
    assert outside.read_text() == "x"


def test_bad_calls_come_back_as_errors(tools):
    assert "unknown tool" in tools.call("delete", {"path": "kernel.py"}).output
    assert "bad arguments" in tools.call("bash", {}).output
    assert "IsADirectory" in tools.call("read", {"path": "."}).output


def test_long_output_is_cut_in_the_middle(tools):
    ran = tools.call("bash", {"command": "python3 -c \"print('a' * 50000 + 'END')\""})
    assert len(ran.output) < OUTPUT_LIMIT + 200
    assert "characters cut" in ran.output and ran.output.rstrip().endswith("END")
    assert truncate("short") == "short"


def test_tool_timeout_is_reported(make_session):
    tools = FencedTools(make_session(turn_timeout_s=1))
    ran = tools.call("bash", {"command": "sleep 30"})
    assert not ran.ok and "timed out" in ran.output


@pytest.fixture(scope="module")
def rms_norm_task(tmp_path_factory):
    """A generated task package, as a tune workspace holds it."""
    from controller.cli import main

    parent = tmp_path_factory.mktemp("tasks")
    assert main(["generate", "rms_norm", "--output", str(parent)]) == 0
    return parent / "rms_norm"


@pytest.mark.parametrize("fence", ["landlock", pytest.param("docker", marks=pytest.mark.docker)])
def test_the_projects_tools_run_in_the_fence_and_its_checkout_stays_unreadable(
    fence, make_session, workspace, rms_norm_task
):
    """`controller evaluate` judges a solution, python with torch, pytest and ruff answer from
    PATH, a shell starts without an error, and the installed packages are readable without the
    checkout around them."""
    from controller.agents.fence_toolbelt import project_package_folders

    shutil.copytree(rms_norm_task, workspace / "task")
    shutil.copytree(rms_norm_task / "solution", workspace / "solution")
    session = make_session().model_copy(update={"fence": get_fence(fence)})
    tools = FencedTools(session)
    ran = tools.call(
        "bash",
        {
            "command": "python -c 'import torch, controller, gates, operators; print(\"imports\")'"
            " && pytest --version && ruff --version"
            " && controller evaluate task --solution solution --device cpu | tail -1"
            " && bash -lc true"
            " && (bash -ic true 2>&1 | grep -v 'job control\\|process group' || true)"
        },
    )
    assert ran.ok, ran.output
    assert "imports" in ran.output and "pytest" in ran.output and "ruff" in ran.output
    assert "rms_norm: PASSED" in ran.output
    assert "Permission denied" not in ran.output and "bashrc" not in ran.output
    checkout = project_package_folders()[0].parent
    for private in (checkout / "pyproject.toml", checkout / ".git" / "HEAD"):
        if private.exists():
            refused = tools.call("bash", {"command": f"cat {private}"})
            assert not refused.ok, private


def test_the_scratch_folder_outlives_each_command_and_no_other_folder_opens(make_session, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    tools = FencedTools(make_session().model_copy(update={"scratch": scratch}))
    assert tools.call("bash", {"command": "echo kept > $SCRATCH/note && echo $TMPDIR > t"}).ok
    assert tools.call("bash", {"command": "cat $SCRATCH/note"}).output.endswith("kept\n")
    assert not tools.call("bash", {"command": f"echo x > {tmp_path}/beside"}).ok
    assert not (tmp_path / "beside").exists()
