"""An optimize batch packed for another machine, without the model's captured inputs.

A device call may end before the batch does, and what travels to the next machine is limited
(a pi0.5 capture alone holds 70 MB of fixtures, copied again into each operator's task). So
`controller pack` leaves every safetensors fixture out of the archive and lists each one in
`travel.json` with its SHA-256. On `--resume` the batch re-records the driver's capture (the
frozen manifest names the driver) and puts back each listed file from the recording whose bytes
have the same digest; a fixture the new recording does not reproduce byte for byte stops the
resume with one line, since the batch's contracts and timings were made on the old bytes.
"""

import hashlib
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from controller.errors import ControllerError
from controller.runs.store import write_json_atomic

TRAVEL_FILE = "travel.json"
LEFT_OUT = "*.safetensors"
RECAPTURE = ".recapture"


class LeftOut(BaseModel):
    """One file the archive leaves out: where it was in the batch and what it held."""

    path: str
    sha256: str
    size: int


class TravelList(BaseModel):
    """Every file `controller pack` left out of the batch's archive."""

    left_out: list[LeftOut]


def pack_batch(folder: Path, archive: Path) -> TravelList:
    """Write `archive` (.tar.gz) of the batch folder without its fixtures, listed in
    `travel.json` inside it; the batch itself keeps every file."""
    folder = folder.resolve()
    files = sorted(path for path in folder.rglob(LEFT_OUT) if path.is_file())
    travel = TravelList(
        left_out=[
            LeftOut(path=path.relative_to(folder).as_posix(), sha256=digest(path), size=size)
            for path in files
            for size in [path.stat().st_size]
        ]
    )
    write_json_atomic(folder / TRAVEL_FILE, travel.model_dump(mode="json"))
    left_out = set(files)
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


def restore_fixtures(folder: Path, record: Callable[[Path], None]) -> int:
    """Put back every missing listed file from a new recording `record(into)` makes of the
    driver's capture; the number put back. Raises ControllerError where the recording does
    not hold a file with a listed file's digest."""
    missing = missing_fixtures(folder)
    if not missing:
        return 0
    into = folder / RECAPTURE
    shutil.rmtree(into, ignore_errors=True)
    try:
        record(into)
        recorded = {digest(path): path for path in into.rglob(LEFT_OUT) if path.is_file()}
        unmatched = [item for item in missing if item.sha256 not in recorded]
        if unmatched:
            raise ControllerError(
                f"optimize: this machine's capture of the driver does not reproduce "
                f"{len(unmatched)} of the {len(missing)} fixtures the batch was planned on "
                f"(first: {unmatched[0].path}); carry the batch with its fixtures instead"
            )
        for item in missing:
            target = folder / item.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(recorded[item.sha256], target)
    finally:
        shutil.rmtree(into, ignore_errors=True)
    return len(missing)


def digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()
