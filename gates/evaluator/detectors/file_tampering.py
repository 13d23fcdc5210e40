"""Rewriting files that later evaluations trust: the evaluator's and the operators' sources,
the task package, the solution, installed packages.

A solution that appends a wrong reference to `operators/catalog/<op>.py` cannot fool the
running evaluation (its judge imported everything before the candidate started), but every
later judge would import the rewritten file. Two layers stop that:

- in the candidate process, the audit hook refuses any write-mode open or path change under
  the protected trees, whoever makes it (`writes_to`);
- in the controller, a byte snapshot of the repository's sources, the task and the solution
  taken before the workers start is compared after they end (`SourceSnapshot`), which also
  sees writes the audit hook cannot (a file mapped with `torch.from_file(shared=True)`).
"""

import os
from pathlib import Path

from gates.evaluator.detectors import CheatDetected

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
MODIFYING_PATH_EVENTS = frozenset(
    {
        "os.rename",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.utime",
        "shutil.copyfile",
        "shutil.move",
        "shutil.rmtree",
    }
)
SOURCE_TREES = ("gates", "operators", "controller", "sandbox", "examples")


class SourcesRewritten(CheatDetected):
    """Files the evaluator or later evaluations trust changed on disk during the evaluation."""


def is_write(event: str, args: tuple) -> bool:
    """Whether an audit event changes the file system (a write-mode open or a path change)."""
    if event in MODIFYING_PATH_EVENTS:
        return True
    if event != "open" or len(args) < 3:
        return False
    mode, flags = args[1], args[2]
    if isinstance(mode, str) and any(letter in mode for letter in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


# Where each path event carries its `dir_fd` (a relative path there is relative to that
# folder, not to the working directory): event -> ((path index, dir_fd index), ...).
PATHS_WITH_DIR_FD = {
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.mkdir": ((0, 2),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.symlink": ((1, 2),),  # the link made, not its target
    "os.rename": ((0, 2), (1, 3)),
    "os.link": ((0, 2), (1, 3)),
    "shutil.rmtree": ((0, 1),),
}


def event_paths(event: str, args: tuple) -> list[str]:
    """The absolute paths a path event touches, with paths relative to a `dir_fd` resolved
    against that folder (`shutil.rmtree` removes files as `os.remove(name, dir_fd=...)`)."""
    places = PATHS_WITH_DIR_FD.get(event)
    if places is None:
        places = ((0, None),) if event in ("open", "os.truncate") else ((0, None), (1, None))
    paths = []
    for path_index, fd_index in places:
        path = args[path_index] if path_index < len(args) else None
        if not isinstance(path, str | bytes):
            continue
        folder = args[fd_index] if fd_index is not None and fd_index < len(args) else None
        paths.append(_resolve(os.fsdecode(path), folder))
    return paths


def _resolve(path: str, dir_fd) -> str:
    if os.path.isabs(path) or not isinstance(dir_fd, int) or dir_fd < 0:
        return os.path.abspath(path)
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
    except OSError:
        return os.path.abspath(path)


def under(path: str, folders: tuple[str, ...]) -> bool:
    """Whether `path` (resolved) lies in one of `folders` (resolved, ending with a separator)."""
    real = os.path.realpath(path)
    return any(real.startswith(folder) or real + os.sep == folder for folder in folders)


class SourceSnapshot:
    """The bytes of every file under the given roots, to compare after the workers end."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [Path(os.path.realpath(root)) for root in roots]
        self.files = self._read()

    def _read(self) -> dict[Path, bytes]:
        contents = {}
        for root in self.roots:
            paths = [root] if root.is_file() else sorted(root.rglob("*"))
            for path in paths:
                if path.is_file() and "__pycache__" not in path.parts:
                    try:
                        contents[path] = path.read_bytes()
                    except OSError:
                        contents[path] = b""
        return contents

    def check(self) -> None:
        """Raise `SourcesRewritten` naming what changed, was added or was removed."""
        now = self._read()
        changed = sorted(path for path in now if self.files.get(path) != now[path])
        removed = sorted(path for path in self.files if path not in now)
        if not changed and not removed:
            return
        shown = ", ".join(str(path) for path in (changed + removed)[:5])
        more = len(changed) + len(removed) - 5
        raise SourcesRewritten(
            f"{shown}{f' (+{more} more)' if more > 0 else ''} changed on disk during the "
            "evaluation; restore them (e.g. `git checkout`) before evaluating again"
        )


def protected_roots(repository: Path, task: Path, solution: Path) -> list[Path]:
    """The trees `SourceSnapshot` watches: the repository's packages, the task, the solution."""
    roots = [repository / name for name in SOURCE_TREES if (repository / name).is_dir()]
    return roots + [repository / "pyproject.toml", task, solution]
