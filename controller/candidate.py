"""What an attempt produced: the candidate commit, built without trusting the workspace's `.git`.

The agent could have rewritten the workspace's git history, index or refs, so the candidate is
built from the plain file tree: the files git would commit under BASE's ignore rules (no
byte-compiled files, caches or nested repositories; symlinks kept as links, never followed),
committed on a commit of the pristine BASE export in a private repository beside the attempt
(`candidate.git`). The gates judge that commit and the review branch holds it; `candidate/`
is an export of it for reading.
"""

import difflib
import os
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gates.registration.judged_commit import (
    CommitChange,
    JudgedCommit,
    commit_workspace,
    make_writable,
)

ChangeKind = Literal["added", "modified", "deleted", "symlink", "binary", "mode"]
BINARY_PROBE_BYTES = 8192
SYMLINK_MODE = "120000"
DIFF_FILE_LIMIT = 256_000
"""Larger files are named in diff.patch, not shown line by line."""
DIFF_TOTAL_LIMIT = 2_000_000
"""diff.patch stops here, saying so (the scope gate reports oversized changes)."""
REPOSITORY = "candidate.git"


class Change(BaseModel):
    """One path that differs from BASE, with the kind of difference a gate cares about."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: ChangeKind


class Candidate(BaseModel):
    """One attempt's candidate commit, an export of it, and how it differs from BASE."""

    model_config = ConfigDict(frozen=True)

    path: Path
    base_path: Path
    changes: tuple[Change, ...]
    commit: JudgedCommit

    def copy_to(self, destination: Path) -> Path:
        """A fresh writable copy of the commit's files for a gate to work in.

        A copy left at `destination` by an earlier, interrupted check is replaced.
        """
        if destination.exists():
            make_writable(destination)
            shutil.rmtree(destination)
        self.commit.export(destination, read_only=False)
        return destination

    def changed_paths(self, *kinds: ChangeKind) -> list[str]:
        return [change.path for change in self.changes if not kinds or change.kind in kinds]


def capture_candidate(workspace: Path, base_path: Path, attempt_dir: Path) -> Candidate:
    """Commit `workspace` into `attempt_dir/candidate.git`, export it to `attempt_dir/candidate/`
    and write `attempt_dir/diff.patch`.

    Staged then renamed, so a snapshot that exists is complete; a second call reuses it.
    """
    destination = attempt_dir / "candidate"
    if not destination.exists():
        repository = attempt_dir / REPOSITORY
        staging_repository = attempt_dir / f"{REPOSITORY}.partial"
        staging = attempt_dir / "candidate.partial"
        for leftover in (repository, staging_repository, staging):
            if leftover.exists():
                make_writable(leftover)
                shutil.rmtree(leftover)
        built = commit_workspace(base_path, workspace, staging_repository)
        os.replace(staging_repository, repository)
        JudgedCommit(git_dir=repository, base=built.base, commit=built.commit).export(
            staging, read_only=False
        )
        os.replace(staging, destination)
    candidate = load_candidate(destination, base_path)
    patch = attempt_dir / "diff.patch"
    if not patch.exists():
        staged_patch = attempt_dir / "diff.patch.partial"
        staged_patch.write_text(unified_diff(candidate), encoding="utf-8")
        os.replace(staged_patch, patch)
    return candidate


def load_candidate(snapshot: Path, base_path: Path) -> Candidate:
    """The Candidate for an existing snapshot (its commit read back from `candidate.git`)."""
    judged = JudgedCommit.load(snapshot.parent / REPOSITORY)
    changes = judged.changes()
    return Candidate(
        path=snapshot,
        base_path=base_path,
        changes=tuple(classify(judged, changes)),
        commit=judged,
    )


def classify(commit: JudgedCommit, changes: list[CommitChange]) -> list[Change]:
    """The kind of each committed change: symlink, binary and mode-only changes named apart."""
    heads = commit.blobs([c.blob for c in changes] + [c.old_blob for c in changes])
    classified = []
    for change in changes:
        if change.kind == "deleted":
            kind = "deleted"
        elif change.mode == SYMLINK_MODE:
            kind = "symlink"
        elif _is_binary(heads.get(change.blob, b"")) or _is_binary(heads.get(change.old_blob, b"")):
            kind = "binary"
        elif change.kind == "modified" and change.blob == change.old_blob:
            kind = "mode"
        else:
            kind = change.kind
        classified.append(Change(path=change.path, kind=kind))
    return classified


def unified_diff(candidate: Candidate) -> str:
    """The candidate's changes as a git-style unified diff, for reading (symlinks are shown as
    `symlink -> target` text, binary and very large files only named)."""
    changes = {change.path: change for change in candidate.commit.changes()}
    contents = candidate.commit.blobs(
        [c.blob for c in changes.values() if c.size <= DIFF_FILE_LIMIT]
        + [c.old_blob for c in changes.values()]
    )
    sections, total = [], 0
    for change in candidate.changes:
        section = _section(change, changes[change.path], contents)
        total += len(section)
        if total > DIFF_TOTAL_LIMIT:
            sections.append(f"... diff truncated at {DIFF_TOTAL_LIMIT:,} characters\n")
            break
        sections.append(section)
    return "".join(sections)


def _section(change: Change, committed: CommitChange, contents: dict[str, bytes]) -> str:
    path = change.path
    header = f"diff --git a/{path} b/{path}\n"
    if committed.kind == "added":
        header += f"new file mode {committed.mode}\n"
    elif committed.kind == "deleted":
        header += f"deleted file mode {committed.old_mode}\n"
    if change.kind == "binary":
        return header + f"Binary files a/{path} and b/{path} differ\n"
    if change.kind == "mode":
        return header + f"old mode {committed.old_mode}\nnew mode {committed.mode}\n"
    if committed.kind != "deleted" and committed.blob not in contents:
        return header + f"({committed.size:,} bytes; too large to show)\n"
    old = _lines(contents.get(committed.old_blob), committed.old_mode)
    new = _lines(contents.get(committed.blob), committed.mode)
    body = difflib.unified_diff(
        old or [],
        new or [],
        fromfile=f"a/{path}" if old is not None else "/dev/null",
        tofile=f"b/{path}" if new is not None else "/dev/null",
    )
    return header + "".join(_terminated(line) for line in body)


def _lines(content: bytes | None, mode: str) -> list[str] | None:
    if content is None:
        return None
    text = content.decode("utf-8", errors="replace")
    if mode == SYMLINK_MODE:
        return [f"symlink -> {text}\n"]
    return text.splitlines(keepends=True)


def _is_binary(content: bytes) -> bool:
    if b"\0" in content[:BINARY_PROBE_BYTES]:
        return True
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _terminated(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
