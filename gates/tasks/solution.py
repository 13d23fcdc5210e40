"""The FlashInfer Trace `Solution` entity, loaded from a folder or a single JSON file.

A solution is untrusted: loading only parses and validates it; nothing in it is imported here.
"""

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gates.errors import GateError
from gates.python_source import parse_python

SOLUTION_FILE = "solution.json"


class SourceFile(BaseModel):
    """One source file of a solution, by relative POSIX path."""

    model_config = ConfigDict(frozen=True)

    path: str = Field(min_length=1)
    content: str

    @model_validator(mode="after")
    def _safe_path(self) -> "SourceFile":
        path = PurePosixPath(self.path)
        if path.is_absolute() or ".." in path.parts or "\\" in self.path:
            raise ValueError(f"sources: path {self.path!r} must be relative, without '..'")
        if self.path.endswith(".py"):
            try:
                parse_python(self.content)
            except SyntaxError as error:
                raise ValueError(f"sources: {self.path} is not valid Python ({error})") from None
        return self


class BuildSpec(BaseModel):
    """How to run a solution: its language, target GPUs and `file.py::function` entry point."""

    model_config = ConfigDict(frozen=True)

    language: Literal["triton", "python"]
    target_hardware: list[str] = Field(min_length=1)
    entry_point: str = Field(pattern=r"^[^:]+\.py::[A-Za-z_][A-Za-z0-9_]*$")
    dependencies: list[str] | None = None

    @property
    def entry_file(self) -> str:
        return self.entry_point.split("::", 1)[0]

    @property
    def entry_function(self) -> str:
        return self.entry_point.split("::", 1)[1]


class Solution(BaseModel):
    """A FlashInfer Trace solution: an implementation of one definition."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    author: str = Field(min_length=1)
    spec: BuildSpec
    sources: list[SourceFile] = Field(min_length=1)
    description: str | None = None

    @model_validator(mode="after")
    def _entry_exists(self) -> "Solution":
        paths = [source.path for source in self.sources]
        if len(set(paths)) != len(paths):
            raise ValueError("sources: duplicate paths")
        if self.spec.entry_file not in paths:
            raise ValueError(f"spec.entry_point: {self.spec.entry_file} is not among the sources")
        return self

    def digest(self) -> str:
        """A content digest of the solution, independent of how it was stored."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(canonical).hexdigest()


def load_solution(location: Path) -> Solution:
    """Read a solution from a folder or one JSON file.

    In a folder the files on disk are the sources (any `sources` in solution.json are
    replaced by them), so editing a kernel file is enough.
    """
    location = Path(location)
    if location.is_dir():
        return _from_folder(location)
    if location.is_file():
        return _parse(location, _read_json(location))
    raise GateError(f"solution {location} does not exist; pass a folder or a solution JSON file")


def _from_folder(folder: Path) -> Solution:
    manifest = folder / SOLUTION_FILE
    if not manifest.is_file():
        raise GateError(f"solution folder {folder} has no {SOLUTION_FILE}")
    data = _read_json(manifest)
    if isinstance(data, dict):
        data["sources"] = _sources_beside(folder)
    return _parse(manifest, data)


def _sources_beside(folder: Path) -> list[dict[str, str]]:
    sources = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise GateError(f"solution folder {folder}: {path.name} is a symlink; copy the file")
        if path.is_file() and path.name != SOLUTION_FILE and "__pycache__" not in path.parts:
            relative = path.relative_to(folder).as_posix()
            sources.append({"path": relative, "content": path.read_text()})
    return sources


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GateError(f"solution {path} is not readable JSON: {error}") from None


def _parse(path: Path, data) -> Solution:
    try:
        return Solution.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "solution"
        raise GateError(f"solution {path} is malformed: {where}: {first['msg']}") from None
