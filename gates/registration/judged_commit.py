"""The candidate commit: what the gates judge and what a review branch publishes.

An attempt's workspace becomes one commit on BASE in a private repository, built from the files
git would commit under BASE's ignore rules (the candidate's own ignore files change nothing),
with no byte-compiled files, caches or nested repositories. Every gate reads an export of this
commit and the published branch is this commit's tree, so what was judged is what ships.
"""

import os
import stat
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

CACHE_FOLDERS = frozenset(
    {b"__pycache__", b".pytest_cache", b".ruff_cache", b".mypy_cache", b".hypothesis"}
)
BYTECODE_SUFFIXES = (b".pyc", b".pyo")
FIXED_DATE = "@0 +0000"
IDENTITY = {
    "GIT_AUTHOR_NAME": "kernel-controller",
    "GIT_AUTHOR_EMAIL": "controller@localhost",
    "GIT_COMMITTER_NAME": "kernel-controller",
    "GIT_COMMITTER_EMAIL": "controller@localhost",
    "GIT_AUTHOR_DATE": FIXED_DATE,
    "GIT_COMMITTER_DATE": FIXED_DATE,
}


class CommitError(Exception):
    """A git operation on the private candidate repository failed."""


class CommitChange(BaseModel):
    """One path the candidate commit changes relative to BASE, as git records it."""

    model_config = ConfigDict(frozen=True)

    path: str
    """The path as text; bytes that are not UTF-8 appear as backslash escapes."""
    utf8: bool
    """Whether the raw path is valid UTF-8 (scope rejects names that are not)."""
    kind: Literal["added", "modified", "deleted"]
    mode: str
    """Git's mode of the new entry: 100644, 100755, 120000 (symlink); empty when deleted."""
    old_mode: str
    blob: str
    old_blob: str
    size: int
    """Bytes of the new content (0 when deleted)."""


class JudgedCommit(BaseModel):
    """A candidate commit and its BASE commit in a private repository."""

    model_config = ConfigDict(frozen=True)

    git_dir: Path
    base: str
    commit: str

    def changes(self) -> list[CommitChange]:
        """Every path that differs from BASE, sorted, with its new mode, blob and size."""
        raw = _git(self.git_dir, "diff-tree", "-r", "-z", "--no-renames", self.base, self.commit)
        sizes = self._sizes()
        fields = raw.split(b"\0")
        changes = []
        for index in range(0, len(fields) - 1, 2):
            old_mode, new_mode, old_blob, blob, status = fields[index].lstrip(b":").split(b" ")
            path = fields[index + 1]
            kind = {b"A": "added", b"D": "deleted"}.get(status[:1], "modified")
            changes.append(
                CommitChange(
                    path=display_path(path),
                    utf8=_is_utf8(path),
                    kind=kind,
                    mode="" if kind == "deleted" else new_mode.decode(),
                    old_mode="" if kind == "added" else old_mode.decode(),
                    blob="" if kind == "deleted" else blob.decode(),
                    old_blob="" if kind == "added" else old_blob.decode(),
                    size=0 if kind == "deleted" else sizes.get(path, 0),
                )
            )
        return sorted(changes, key=lambda change: change.path)

    @classmethod
    def load(cls, git_dir: Path) -> "JudgedCommit":
        """The commit `commit_workspace` recorded in `git_dir` (its `base` and `candidate`)."""
        base, commit = (
            _git(git_dir, "rev-parse", f"refs/heads/{name}").strip().decode()
            for name in ("base", "candidate")
        )
        return cls(git_dir=Path(git_dir), base=base, commit=commit)

    def read(self, path: str) -> bytes:
        """The committed content of a UTF-8 `path`."""
        return _git(self.git_dir, "cat-file", "blob", f"{self.commit}:{path}")

    def blobs(self, ids: list[str]) -> dict[str, bytes]:
        """The contents of many blobs at once (one `git cat-file --batch`)."""
        wanted = sorted({blob for blob in ids if blob})
        if not wanted:
            return {}
        output = _git(self.git_dir, "cat-file", "--batch", stdin="\n".join(wanted).encode() + b"\n")
        found, position = {}, 0
        while position < len(output):
            end = output.index(b"\n", position)
            blob, kind, size = output[position:end].split(b" ")
            start = end + 1
            found[blob.decode()] = output[start : start + int(size)]
            position = start + int(size) + 1
        return found

    def export(self, destination: Path, read_only: bool = True) -> Path:
        """Write the commit's files into the new folder `destination`; read-only by default, so
        a gate that runs code cannot rewrite what it judges without first undoing the bits."""
        export_commit(self.git_dir, self.commit, destination)
        if read_only:
            make_read_only(destination)
        return destination

    def _sizes(self) -> dict[bytes, int]:
        listing = _git(self.git_dir, "ls-tree", "-r", "-l", "-z", self.commit)
        sizes = {}
        for entry in listing.split(b"\0"):
            if entry:
                meta, _, path = entry.partition(b"\t")
                size = meta.split()[-1]
                sizes[path] = int(size) if size.isdigit() else 0
        return sizes


def commit_workspace(base_tree: Path, workspace: Path, git_dir: Path) -> JudgedCommit:
    """Commit BASE (`base_tree`) and then the workspace's committable files on top of it.

    `git_dir` must not exist yet; it becomes a bare repository holding just these two commits.
    """
    git_dir = Path(git_dir)
    _git(git_dir.parent, "init", "--quiet", "--bare", "--template=", str(git_dir), bare=True)
    base_files = listed_files(base_tree)
    base = _commit_files(git_dir, base_tree, base_files, "BASE", parent=None)
    _git(git_dir, "update-ref", "refs/heads/base", base)
    files = listed_files(workspace)
    ignored = _ignored_by_base(files, base_tree, git_dir)
    tracked = set(base_files)
    chosen = [path for path in files if path not in ignored or path in tracked]
    commit = _commit_files(git_dir, workspace, chosen, "candidate", parent=base)
    _git(git_dir, "update-ref", "refs/heads/candidate", commit)
    return JudgedCommit(git_dir=git_dir, base=base, commit=commit)


def listed_files(root: Path) -> list[bytes]:
    """Regular files and symlinks below `root` as raw relative paths, sorted, links never
    followed; `.git` anywhere (a folder holding one is a nested repository and is left out
    whole), cache folders and byte-compiled files are left out."""
    found: list[bytes] = []
    top = os.fsencode(root)
    pending = [b""]
    while pending:
        relative = pending.pop()
        folder = os.path.join(top, relative) if relative else top
        entries = {entry.name: entry.stat(follow_symlinks=False) for entry in _scan(folder)}
        if relative and b".git" in entries:
            continue
        for name, entry_stat in entries.items():
            path = os.path.join(relative, name) if relative else name
            mode = entry_stat.st_mode
            if name == b".git" or (name in CACHE_FOLDERS and stat.S_ISDIR(mode)):
                continue
            if stat.S_ISDIR(mode):
                pending.append(path)
            elif stat.S_ISLNK(mode):
                found.append(path)
            elif stat.S_ISREG(mode) and not name.endswith(BYTECODE_SUFFIXES):
                if not mode & stat.S_IRUSR:
                    os.chmod(os.path.join(top, path), stat.S_IMODE(mode) | stat.S_IRUSR)
                found.append(path)
    return sorted(found)


def _scan(folder: bytes) -> list[os.DirEntry]:
    """The entries of a workspace folder, made readable first if the agent locked it."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except PermissionError:
        os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) | 0o700)
        with os.scandir(folder) as entries:
            return list(entries)


def _commit_files(git_dir: Path, root: Path, files: list[bytes], message: str, parent):
    """One commit of exactly `files` below `root`, in a private index."""
    index = git_dir / f"index-{message}"
    index.unlink(missing_ok=True)
    index_env = {"GIT_INDEX_FILE": str(index)}
    if files:
        _git(
            git_dir,
            f"--work-tree={root}",
            "update-index",
            "--add",
            "-z",
            "--stdin",
            env=index_env,
            stdin=b"\0".join(files) + b"\0",
            cwd=root,
        )
    else:
        _git(git_dir, "read-tree", "--empty", env=index_env)
    tree = _git(git_dir, "write-tree", env=index_env).strip().decode()
    index.unlink(missing_ok=True)
    parents = ["-p", parent] if parent else []
    output = _git(git_dir, "commit-tree", tree, *parents, env=IDENTITY, stdin=message.encode())
    return output.strip().decode()


def export_commit(git_dir: Path, commit: str, destination: Path) -> None:
    """Write the tree of `commit` into the new folder `destination` (no .git, no history)."""
    destination = Path(destination)
    destination.mkdir(parents=True, exist_ok=False)
    archive = subprocess.Popen(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", commit],
        stdout=subprocess.PIPE,
        env=_environment(),
    )
    extract = subprocess.run(
        ["tar", "-x", "-f", "-", "-C", str(destination)], stdin=archive.stdout, capture_output=True
    )
    archive.stdout.close()
    if archive.wait() != 0 or extract.returncode != 0:
        raise CommitError(f"could not export {commit}: {extract.stderr.decode(errors='replace')}")


def make_read_only(root: Path) -> None:
    """Clear the write bits of every file and folder below `root` (links are left alone)."""
    for folder, _, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode & ~0o222)
        os.chmod(folder, os.stat(folder).st_mode & ~0o222)


def make_writable(root: Path) -> None:
    """Undo `make_read_only`, so a gate's folder can be removed."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, os.stat(folder).st_mode | 0o700)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o600)


def display_path(raw: bytes) -> str:
    """A path as text that any JSON or UTF-8 file can hold (invalid bytes escaped)."""
    return raw.decode("utf-8", errors="backslashreplace")


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _ignored_by_base(paths: list[bytes], base_tree: Path, git_dir: Path) -> set[bytes]:
    """The paths BASE's .gitignore files ignore (checked against BASE's tree, not the
    workspace's, so a candidate cannot hide its own files by adding ignore rules)."""
    if not paths:
        return set()
    completed = subprocess.run(
        ["git", f"--git-dir={git_dir}", f"--work-tree={base_tree}"]
        + ["check-ignore", "--no-index", "-z", "--stdin"],
        input=b"\0".join(paths) + b"\0",
        capture_output=True,
        cwd=base_tree,
        env=_environment(),
        check=False,
    )
    if completed.returncode not in (0, 1):
        raise CommitError(f"git check-ignore failed: {completed.stderr.decode(errors='replace')}")
    return set(completed.stdout.split(b"\0")) - {b""}


def _environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """git without the user's or the system's configuration (no global excludes, no hooks)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    environment.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "HOME": os.devnull,
        }
    )
    environment.update(extra or {})
    return environment


def _git(git_dir: Path, *arguments: str, env=None, stdin=b"", cwd=None, bare=False) -> bytes:
    """Run git on the private repository (`bare`: run it without one, for `init`)."""
    command = ["git", *arguments] if bare else ["git", f"--git-dir={git_dir}", *arguments]
    completed = subprocess.run(
        command, input=stdin, capture_output=True, cwd=cwd, env=_environment(env), check=False
    )
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip().splitlines()
        detail = message[-1] if message else f"exit {completed.returncode}"
        raise CommitError(f"git {' '.join(arguments[:2])} failed: {detail}")
    return completed.stdout
