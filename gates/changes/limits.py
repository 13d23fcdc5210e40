"""Size, count and text limits on a candidate's changed files, shared by every flow's scope gate.

A gate lists its changes as `ChangedFile` rows (path and size) and reads a file's bytes only
when its size is within the limit, so a 43 MB source is refused without being read.
"""

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field


class ChangeLimits(BaseModel):
    """How large one changed file, all of them together and their count may be."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_file_bytes: int = Field(default=1_000_000, gt=0, description="largest changed file")
    max_change_bytes: int = Field(default=4_000_000, gt=0, description="all changed files")
    max_changed_files: int = Field(default=200, gt=0, description="number of changed paths")


class ChangedFile(BaseModel):
    """One added or modified path and its size in bytes (0 for a deletion)."""

    model_config = ConfigDict(frozen=True)

    path: str
    size: int


def limit_violations(changes: Sequence[ChangedFile], limits: ChangeLimits) -> list[str]:
    """The count and total-size limits the change list breaks, each with its figure."""
    found = []
    if len(changes) > limits.max_changed_files:
        found.append(
            f"{len(changes)} changed paths, over the limit of {limits.max_changed_files} "
            "(max_changed_files)"
        )
    total = sum(change.size for change in changes)
    if total > limits.max_change_bytes:
        found.append(
            f"the change adds {total:,} bytes, over the limit of {limits.max_change_bytes:,} "
            "(max_change_bytes)"
        )
    return found


def file_violation(
    change: ChangedFile, read: Callable[[], bytes], limits: ChangeLimits
) -> str | None:
    """Why one changed file is refused (over the per-file limit, or not UTF-8 text), or None;
    `read` is called only for a file within the limit."""
    if change.size > limits.max_file_bytes:
        return (
            f"{change.path}: {change.size:,} bytes, over the per-file limit of "
            f"{limits.max_file_bytes:,} (max_file_bytes)"
        )
    if not is_text(read()):
        return f"{change.path}: binary files are not allowed"
    return None


def is_text(content: bytes) -> bool:
    """UTF-8 without NUL bytes: what a source or test file is."""
    if b"\0" in content:
        return False
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
