"""The few git operations the controller needs on a target, run as plain `git` subprocesses."""

import os
import subprocess
import tempfile
from pathlib import Path

from controller.errors import ControllerError

# Commits the controller makes carry a fixed identity so they never depend on the user's config.
CONTROLLER_IDENTITY = {
    "GIT_AUTHOR_NAME": "kernel-controller",
    "GIT_AUTHOR_EMAIL": "controller@localhost",
    "GIT_COMMITTER_NAME": "kernel-controller",
    "GIT_COMMITTER_EMAIL": "controller@localhost",
}


def git(repo: Path, *arguments: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> str:
    """Run git in `repo` and return stdout; a failure becomes a ControllerError naming the call."""
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    completed = subprocess.run(
        ["git", "-C", str(repo), *arguments],
        input=stdin,
        capture_output=True,
        env=environment,
        check=False,
    )
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip().splitlines()
        detail = message[-1] if message else f"exit {completed.returncode}"
        raise ControllerError(f"git {' '.join(arguments[:2])} failed in {repo}: {detail}")
    return completed.stdout.decode(errors="replace")


def resolve_commit(repo: Path, revision: str) -> str:
    """The full commit id `revision` names in `repo`, refusing anything that is not a commit."""
    if not (repo / ".git").exists() and not _is_git_dir(repo):
        raise ControllerError(f"{repo} is not a git repository; pass a target repository")
    return git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").strip()


def commit_exists(repo: Path, commit: str) -> bool:
    """Whether `repo` still holds `commit` (a run's BASE must survive until it is resumed)."""
    completed = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return completed.returncode == 0


def export_commit(repo: Path, commit: str, destination: Path) -> None:
    """Write the tree of `commit` into the empty folder `destination` (no .git, no history)."""
    destination.mkdir(parents=True, exist_ok=False)
    archive = subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", commit], stdout=subprocess.PIPE
    )
    extract = subprocess.run(
        ["tar", "-x", "-f", "-", "-C", str(destination)], stdin=archive.stdout, capture_output=True
    )
    archive.stdout.close()
    if archive.wait() != 0 or extract.returncode != 0:
        raise ControllerError(f"could not export {commit} from {repo}: {extract.stderr.decode()}")


def commit_tree_as_branch(repo: Path, base: str, tree_dir: Path, branch: str, message: str) -> str:
    """Commit the files of `tree_dir` as one commit on `base` at `branch`; idempotent.

    A branch already there is reused when it holds exactly this tree on `base`, else refused.
    """
    with tempfile.TemporaryDirectory(prefix="controller-index-") as scratch:
        index_env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), **CONTROLLER_IDENTITY}
        git(repo, "read-tree", "--empty", env=index_env)
        git(repo, f"--work-tree={tree_dir}", "add", "-A", "--force", ".", env=index_env)
        tree = git(repo, "write-tree", env=index_env).strip()
    existing = _branch_commit(repo, branch)
    if existing:
        parents = git(repo, "rev-list", "--parents", "-n", "1", existing).split()[1:]
        if git(repo, "rev-parse", f"{existing}^{{tree}}").strip() == tree and parents == [base]:
            return existing
        raise ControllerError(f"branch {branch} exists with other content; delete it or rerun")
    commit = git(
        repo,
        "commit-tree",
        tree,
        "-p",
        base,
        "-F",
        "-",
        env=CONTROLLER_IDENTITY,
        stdin=message.encode(),
    ).strip()
    git(repo, "update-ref", f"refs/heads/{branch}", commit, "")
    return commit


def _branch_commit(repo: Path, branch: str) -> str | None:
    completed = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return completed.stdout.strip() or None


def _is_git_dir(path: Path) -> bool:
    completed = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, check=False
    )
    return completed.returncode == 0
