"""The project's own tools inside an agent's fence: `controller evaluate`, `pytest`, `ruff` and the
project's `python`, runnable exactly as the prompts write them.

An agent that cannot evaluate its candidate, run the tests or lint its code is blind until the
gates answer, one attempt at a time. Each tool lives in the interpreter's `bin` folder (a
virtual environment's, when the controller runs from one); the installed project's packages may
live outside every granted prefix (an editable install maps them to the checkout), so their
folders are granted read-only by name, never the checkout around them (its runs, `.git` and
anything else stay unreadable). The one folder made writable is the session's scratch, outside
the workspace, which outlives each command's private tmp.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

DISTRIBUTION = "kernel-controller"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def tool_folder() -> Path:
    """The folder holding this interpreter and the project's console scripts (unresolved, so a
    virtual environment's `bin` is kept rather than the base interpreter's)."""
    return Path(sys.executable).absolute().parent


@functools.cache
def project_package_folders() -> tuple[Path, ...]:
    """The folders the installed project's top-level packages import from, resolved (once a
    process: every session's fence asks)."""
    try:
        listed = importlib.metadata.distribution(DISTRIBUTION).read_text("top_level.txt") or ""
        names = [name.strip() for name in listed.splitlines() if name.strip()]
    except importlib.metadata.PackageNotFoundError:
        names = [__name__.split(".")[0]]
    folders: list[Path] = []
    for name in names:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location).resolve()
            if folder.is_dir() and folder not in folders:
                folders.append(folder)
    return tuple(folders)


def tool_search_path(first: Path | None = None) -> str:
    """PATH for an agent's commands: an optional folder first (a CLI agent's own), then the
    project's tools, then the system's."""
    folders = [str(first)] if first is not None else []
    folders += [str(tool_folder()), SYSTEM_PATH]
    return ":".join(folders)


def with_project_tools(policy, scratch: Path | None = None, first_on_path: Path | None = None):
    """A copy of a fence policy under which the project's tools run: the package folders
    readable, PATH set, and the session's scratch folder (if any) writable and named by
    `$SCRATCH`. Validated again, like every policy change."""
    readable = list(policy.readable)
    readable += [folder for folder in project_package_folders() if folder not in readable]
    writable = list(policy.writable)
    env_values = {**policy.env_values, "PATH": tool_search_path(first_on_path)}
    if scratch is not None:
        writable += [] if scratch in writable else [scratch]
        env_values["SCRATCH"] = str(scratch)
    return type(policy).model_validate(
        {
            **policy.model_dump(),
            "readable": tuple(readable),
            "writable": tuple(writable),
            "env_values": env_values,
        }
    )


LOGIN_FILES = (".bash_profile", ".profile")


def write_login_profile(home: Path, search_path: str) -> None:
    """Start-up files for a login shell in `home`: the system's /etc/profile resets PATH (a CLI
    agent's shell tool may start one), so the fence's PATH is set again after it."""
    quoted = search_path.replace("'", "'\\''")
    text = (
        "# Written by the controller: /etc/profile resets PATH; the fence's PATH comes back.\n"
        f"export PATH='{quoted}'\n"
    )
    for name in LOGIN_FILES:
        (home / name).write_text(text)
