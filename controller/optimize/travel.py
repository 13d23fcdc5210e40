"""An optimize batch packed for another machine, without the model's captured inputs.

A device call may end before the batch does, and what travels to the next machine is limited
(a pi0.5 capture alone holds 70 MB of fixtures, copied again into each operator's task, and
committed again into each attempt's workspace and judged commit). So `controller pack` leaves
out every safetensors fixture and every git object that stores one, and lists each in
`travel.json` with the SHA-256 of the fixture's bytes. On `--resume` the batch re-records the
driver's capture (the frozen manifest names the driver) and puts back each listed file from
the recording whose bytes have the same digest; a git object is written again from those bytes
and must have its old name (git names an object by the SHA-1 of what it stores). A fixture the
new recording does not reproduce byte for byte stops the resume with one line, since the
batch's contracts and timings were made on the old bytes.
"""

import hashlib
import os
import shutil
import stat
import tarfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from controller.errors import ControllerError
from controller.runs.store import write_json_atomic
from operators.profiles import file_digest

TRAVEL_FILE = "travel.json"
LEFT_OUT = "*.safetensors"
RECAPTURE = ".recapture"
HEADER_BYTES = 64
"""A loose object's header (`blob 123456\\0`) is far shorter; input is read in chunks this size."""


class LeftOut(BaseModel):
    """One file the archive leaves out: where it was, what it was, the fixture it held."""

    path: str
    sha256: str
    """Of the fixture's bytes (a git object's: of the blob it stores)."""
    size: int
    kind: Literal["fixture", "git-object"] = "fixture"


class TravelList(BaseModel):
    """Every file `controller pack` left out of the batch's archive."""

    left_out: list[LeftOut]


def pack_batch(folder: Path, archive: Path) -> TravelList:
    """Write `archive` (.tar.gz) of the batch folder without its fixtures, listed in
    `travel.json` inside it; the batch itself keeps every file."""
    folder = folder.resolve()
    fixtures = [
        LeftOut(path=path.relative_to(folder).as_posix(), sha256=file_digest(path), size=size)
        for path in sorted(folder.rglob(LEFT_OUT))
        if path.is_file()
        for size in [path.stat().st_size]
    ]
    known = {item.sha256 for item in fixtures}
    sizes = {item.size for item in fixtures}
    objects = [
        LeftOut(path=path.relative_to(folder).as_posix(), sha256=held, size=size, kind="git-object")
        for path, size in _blob_objects(folder, sizes)
        if (held := hashlib.sha256(_blob_content(path)).hexdigest()) in known
    ]
    travel = TravelList(left_out=fixtures + objects)
    write_json_atomic(folder / TRAVEL_FILE, travel.model_dump(mode="json"))
    left_out = {folder / item.path for item in travel.left_out}
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(
            folder,
            arcname=folder.name,
            filter=lambda item: None if Path(folder.parent, item.name) in left_out else item,
        )
    return travel


def missing_fixtures(folder: Path) -> list[LeftOut]:
    """The files `travel.json` lists that this copy of the batch lacks."""
    listed = folder / TRAVEL_FILE
    if not listed.is_file():
        return []
    travel = TravelList.model_validate_json(listed.read_text())
    return [item for item in travel.left_out if not (folder / item.path).is_file()]


def restore_fixtures(folder: Path, missing: list[LeftOut], record: Callable[[Path], None]) -> int:
    """Put back the `missing` listed files (`missing_fixtures`) from a new recording
    `record(into)` makes of the driver's capture; the number put back. Raises
    ControllerError where the recording does not hold a file with a listed file's digest."""
    into = folder / RECAPTURE
    shutil.rmtree(into, ignore_errors=True)
    try:
        record(into)
        recorded = {file_digest(path): path for path in into.rglob(LEFT_OUT) if path.is_file()}
        unmatched = [item for item in missing if item.sha256 not in recorded]
        if unmatched:
            raise ControllerError(
                f"optimize: this machine's capture of the driver does not reproduce "
                f"{len(unmatched)} of the {len(missing)} fixtures the batch was planned on "
                f"(first: {unmatched[0].path}); carry the batch with its fixtures instead"
            )
        for item in missing:
            _put_back(folder / item.path, recorded[item.sha256], item)
    finally:
        shutil.rmtree(into, ignore_errors=True)
    return len(missing)


def _put_back(target: Path, recorded: Path, item: LeftOut) -> None:
    """Write one left-out file again, in a folder kept read-only (a judged commit's) too."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if item.kind == "fixture":
        content = recorded.read_bytes()
    else:
        stored = b"blob %d\0" % recorded.stat().st_size + recorded.read_bytes()
        if hashlib.sha1(stored, usedforsecurity=False).hexdigest() != (
            target.parent.name + target.name
        ):
            raise ControllerError(f"optimize: the git object {item.path} cannot be written again")
        content = zlib.compress(stored)
    mode = target.parent.stat().st_mode
    os.chmod(target.parent, mode | stat.S_IWUSR)
    try:
        target.write_bytes(content)
        if item.kind == "git-object":
            os.chmod(target, 0o444)  # as git leaves a loose object
    finally:
        os.chmod(target.parent, mode)


def _blob_objects(folder: Path, sizes: set[int]) -> Iterator[tuple[Path, int]]:
    """Every loose git object under `folder` that stores a blob of one of `sizes` bytes."""
    for path in folder.rglob("objects/??/*"):
        if not (path.is_file() and len(path.parent.name) == 2 and len(path.name) == 38):
            continue
        head = _object_header(path)
        kind, _, rest = head.partition(b" ")
        size = rest.split(b"\0", 1)[0]
        if kind == b"blob" and size.isdigit() and int(size) in sizes:
            yield path, int(size)


def _object_header(path: Path) -> bytes:
    """A loose object's `<type> <size>` header, inflating only as much as it takes."""
    inflate, head = zlib.decompressobj(), b""
    with path.open("rb") as handle:
        while b"\0" not in head and len(head) < HEADER_BYTES:
            chunk = handle.read(HEADER_BYTES)
            if not chunk:
                break
            head += inflate.decompress(chunk)
    return head.split(b"\0", 1)[0]


def _blob_content(path: Path) -> bytes:
    return zlib.decompress(path.read_bytes()).split(b"\0", 1)[1]
