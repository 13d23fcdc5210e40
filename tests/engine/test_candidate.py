"""The candidate snapshot: every kind of change is classified, links are never followed, and
nothing the agent did to `.git` reaches the candidate."""

import os

import pytest
from engine_fixtures import make_target

from controller.candidate import capture_candidate
from controller.gitrepo import git
from controller.workspace import create_workspace


@pytest.fixture
def workspace(tmp_path):
    target = make_target(tmp_path / "target")
    base = git(target, "rev-parse", "HEAD").strip()
    create_workspace(target, base, tmp_path / "base")
    return create_workspace(target, base, tmp_path / "attempt" / "workspace")


def kinds(candidate):
    return {change.path: change.kind for change in candidate.changes}


def capture(workspace, tmp_path):
    return capture_candidate(workspace, tmp_path / "base", workspace.parent)


def test_an_untouched_workspace_has_no_changes(workspace, tmp_path):
    assert capture(workspace, tmp_path).changes == ()


def test_each_kind_of_change_is_classified(workspace, tmp_path):
    (workspace / "hello.txt").write_text("hello\n")
    (workspace / "README.md").unlink()
    (workspace / "new" / "deep").mkdir(parents=True)
    (workspace / "new" / "deep" / "added.py").write_text("x = 1\n")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    (workspace / "tool.sh").chmod(0o644)
    os.symlink("/etc/passwd", workspace / "escape")
    candidate = capture(workspace, tmp_path)
    assert kinds(candidate) == {
        "README.md": "deleted",
        "blob.bin": "binary",
        "escape": "symlink",
        "hello.txt": "modified",
        "new/deep/added.py": "added",
        "tool.sh": "mode",
    }
    assert os.readlink(candidate.path / "escape") == "/etc/passwd"  # kept as a link, not followed
    patch = (workspace.parent / "diff.patch").read_text()
    assert "-hi\n+hello\n" in patch
    assert "Binary files a/blob.bin and b/blob.bin differ" in patch
    assert "old mode 100755\nnew mode 100644" in patch
    assert "+symlink -> /etc/passwd" in patch


def test_a_symlinked_folder_is_not_walked(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink(outside, workspace / "linked")
    candidate = capture(workspace, tmp_path)
    assert kinds(candidate) == {"linked": "symlink"}
    assert not (candidate.path / "linked").resolve().is_relative_to(candidate.path)


def test_a_rewritten_git_history_does_not_reach_the_candidate(workspace, tmp_path):
    (workspace / "hello.txt").write_text("hello\n")
    git(workspace, "add", "-A")
    git(workspace, "-c", "user.name=a", "-c", "user.email=a@l", "commit", "-qm", "x")
    git(workspace, "update-ref", "refs/heads/base", "HEAD")
    (workspace / ".git" / "hooks").mkdir(exist_ok=True)
    (workspace / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nrm -rf /\n")
    candidate = capture(workspace, tmp_path)
    assert kinds(candidate) == {"hello.txt": "modified"}
    assert not (candidate.path / ".git").exists()


def test_a_fifo_is_left_out(workspace, tmp_path):
    os.mkfifo(workspace / "pipe")
    candidate = capture(workspace, tmp_path)
    assert not (candidate.path / "pipe").exists() and candidate.changes == ()


def test_a_second_capture_reuses_the_complete_snapshot(workspace, tmp_path):
    (workspace / "hello.txt").write_text("hello\n")
    first = capture(workspace, tmp_path)
    (workspace / "hello.txt").write_text("changed after the snapshot\n")
    assert capture(workspace, tmp_path) == first
