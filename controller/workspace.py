"""The agent's workspace: a fresh one-commit copy of BASE, so no history or other refs leak in."""

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller.gitrepo import CONTROLLER_IDENTITY, export_commit, git


def create_workspace(target: Path, base_commit: str, destination: Path) -> Path:
    """Export BASE into `destination` and commit it as the only commit of a new repository.

    The new repository has one branch, no remotes, no reflog and no hooks, so `git log` and
    `git diff` work for the agent while nothing but BASE is visible. A stale `destination`
    (from an attempt that died) is replaced.
    """
    if destination.exists():
        shutil.rmtree(destination)
    export_commit(target, base_commit, destination)
    git(destination, "init", "--quiet", "--initial-branch=base")
    git(destination, "config", "core.logAllRefUpdates", "false")
    git(destination, "add", "--all", "--force")
    dated = {**CONTROLLER_IDENTITY, "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}
    git(
        destination,
        "commit",
        "--quiet",
        "--no-verify",
        "--allow-empty",
        "-m",
        f"BASE {base_commit}",
        env=dated,
    )
    for leftover in ("logs", "hooks", "COMMIT_EDITMSG", "description"):
        path = destination / ".git" / leftover
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return destination


def attempt_policy(settings: dict[str, Any], workspace: Path, readable: Sequence[Path]) -> Any:
    """The fence policy for one attempt: the frozen settings plus this workspace and context.

    The workspace's `.git` is kept read-only by the fence; the candidate snapshot never
    trusts `.git` either way.
    """
    from sandbox.policy import FencePolicy

    fields = dict(settings)
    fields["workspace"] = workspace
    fields["readable"] = tuple(fields.get("readable", ())) + tuple(readable)
    if (workspace / ".git").is_dir():
        fields["readonly_within_workspace"] = (
            *fields.get("readonly_within_workspace", ()),
            workspace / ".git",
        )
    return FencePolicy(**fields)
