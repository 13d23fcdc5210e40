"""What an attempt produced: a snapshot of the workspace taken without trusting its `.git`.

The agent could have rewritten the workspace's git history, index or refs, so the candidate is
the plain file tree (regular files copied, symlinks kept as links and never followed, `.git`
left out), compared with a pristine export of BASE kept in the run folder.
"""

import difflib
import os
import shutil
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

ChangeKind = Literal["added", "modified", "deleted", "symlink", "binary", "mode"]
EXCLUDED_TOP_LEVEL = frozenset({".git"})
BINARY_PROBE_BYTES = 8192


class Change(BaseModel):
    """One path that differs from BASE, with the kind of difference a gate cares about."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: ChangeKind


class Candidate(BaseModel):
    """A snapshot of one attempt's tree and how it differs from BASE; gates judge this."""

    model_config = ConfigDict(frozen=True)

    path: Path
    base_path: Path
    changes: tuple[Change, ...]

    def copy_to(self, destination: Path) -> Path:
        """A fresh copy for a gate to work in, so no gate can alter what the next one sees.

        A copy left at `destination` by an earlier, interrupted check is replaced.
        """
        if destination.exists():
            shutil.rmtree(destination)
        copy_tree(self.path, destination)
        return destination

    def changed_paths(self, *kinds: ChangeKind) -> list[str]:
        return [change.path for change in self.changes if not kinds or change.kind in kinds]


def capture_candidate(workspace: Path, base_path: Path, attempt_dir: Path) -> Candidate:
    """Snapshot `workspace` into `attempt_dir/candidate/` and write `attempt_dir/diff.patch`.

    Staged then renamed, so a snapshot that exists is complete; a second call reuses it.
    """
    destination = attempt_dir / "candidate"
    if not destination.exists():
        staging = attempt_dir / "candidate.partial"
        if staging.exists():
            shutil.rmtree(staging)
        copy_tree(workspace, staging)
        os.replace(staging, destination)
    candidate = load_candidate(destination, base_path)
    patch = attempt_dir / "diff.patch"
    if not patch.exists():
        staged_patch = attempt_dir / "diff.patch.partial"
        staged_patch.write_text(unified_diff(candidate))
        os.replace(staged_patch, patch)
    return candidate


def load_candidate(snapshot: Path, base_path: Path) -> Candidate:
    """The Candidate for an existing snapshot (recomputed, so it needs nothing else stored)."""
    return Candidate(
        path=snapshot, base_path=base_path, changes=tuple(compare_trees(base_path, snapshot))
    )


def copy_tree(source: Path, destination: Path) -> None:
    """Copy regular files and symlinks (as links) below `source`, skipping a top-level `.git`.

    Other file types (fifos, sockets, devices) are not copied: a candidate is source code.
    """
    destination.mkdir(parents=True)
    for relative, entry_stat in _walk(source):
        origin, target = source / relative, destination / relative
        if stat.S_ISDIR(entry_stat.st_mode):
            target.mkdir()
        elif stat.S_ISLNK(entry_stat.st_mode):
            os.symlink(os.readlink(origin), target)
        elif stat.S_ISREG(entry_stat.st_mode):
            shutil.copyfile(origin, target, follow_symlinks=False)
            os.chmod(target, stat.S_IMODE(entry_stat.st_mode) & 0o755 | 0o600)


def compare_trees(base: Path, candidate: Path) -> list[Change]:
    """Every file or symlink that differs between the two trees, sorted by path."""
    base_entries = {path: mode for path, mode in _files(base)}
    candidate_entries = {path: mode for path, mode in _files(candidate)}
    changes = []
    for path in sorted(base_entries.keys() | candidate_entries.keys()):
        kind = _change_kind(
            base, candidate, path, base_entries.get(path), candidate_entries.get(path)
        )
        if kind:
            changes.append(Change(path=path, kind=kind))
    return changes


def unified_diff(candidate: Candidate) -> str:
    """The candidate's changes as a git-style unified diff, for reading (symlinks are shown as
    `symlink -> target` text, binary files only named)."""
    sections = []
    for change in candidate.changes:
        old, new = candidate.base_path / change.path, candidate.path / change.path
        header = f"diff --git a/{change.path} b/{change.path}\n"
        if change.kind in ("added", "binary") and not os.path.lexists(old):
            header += f"new file mode {_mode_text(new)}\n"
        elif change.kind == "deleted":
            header += f"deleted file mode {_mode_text(old)}\n"
        if change.kind == "binary":
            sections.append(header + f"Binary files a/{change.path} and b/{change.path} differ\n")
            continue
        if change.kind == "mode":
            old_mode, new_mode = _mode_text(old), _mode_text(new)
            sections.append(header + f"old mode {old_mode}\nnew mode {new_mode}\n")
            continue
        had, has = os.path.lexists(old), os.path.lexists(new)
        body = difflib.unified_diff(
            _diff_lines(old) if had else [],
            _diff_lines(new) if has else [],
            fromfile=f"a/{change.path}" if had else "/dev/null",
            tofile=f"b/{change.path}" if has else "/dev/null",
        )
        sections.append(header + "".join(_terminated(line) for line in body))
    return "".join(sections)


def _walk(root: Path):
    """(relative path, lstat) for everything below root, parents first, never following links."""
    pending = [Path()]
    while pending:
        relative = pending.pop()
        with os.scandir(root / relative) as entries:
            for entry in sorted(entries, key=lambda item: item.name):
                if relative == Path() and entry.name in EXCLUDED_TOP_LEVEL:
                    continue
                entry_stat = entry.stat(follow_symlinks=False)
                yield relative / entry.name, entry_stat
                if stat.S_ISDIR(entry_stat.st_mode):
                    pending.append(relative / entry.name)


def _files(root: Path):
    for relative, entry_stat in _walk(root):
        if stat.S_ISLNK(entry_stat.st_mode) or stat.S_ISREG(entry_stat.st_mode):
            yield relative.as_posix(), entry_stat.st_mode


def _change_kind(base: Path, candidate: Path, path: str, old_mode, new_mode) -> ChangeKind | None:
    new_is_link = new_mode is not None and stat.S_ISLNK(new_mode)
    if new_mode is None:
        return "deleted"
    if new_is_link:
        same_link = old_mode is not None and stat.S_ISLNK(old_mode)
        if same_link and os.readlink(base / path) == os.readlink(candidate / path):
            return None
        return "symlink"
    new_bytes = (candidate / path).read_bytes()
    if old_mode is None:
        return "binary" if _is_binary(new_bytes) else "added"
    old_bytes = os.readlink(base / path).encode() if stat.S_ISLNK(old_mode) else None
    old_bytes = old_bytes if old_bytes is not None else (base / path).read_bytes()
    if old_bytes != new_bytes or stat.S_ISLNK(old_mode):
        return "binary" if _is_binary(old_bytes) or _is_binary(new_bytes) else "modified"
    if (old_mode & 0o111 != 0) != (new_mode & 0o111 != 0):
        return "mode"
    return None


def _is_binary(content: bytes) -> bool:
    if b"\0" in content[:BINARY_PROBE_BYTES]:
        return True
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _diff_lines(path: Path) -> list[str]:
    if path.is_symlink():
        return [f"symlink -> {os.readlink(path)}\n"]
    return path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)


def _terminated(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _mode_text(path: Path) -> str:
    return "100755" if os.lstat(path).st_mode & 0o111 else "100644"
