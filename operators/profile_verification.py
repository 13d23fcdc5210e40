"""Whether an installed profile passed `verify` as it is now: `tuned/<name>/verified.json`.

`install` leaves a profile unverified (it removes the record); `controller verify` writes the
record only when the profile passed the model-level gates, naming the digest of the
`profile.json` it judged, which covers every file of the profile. A profile changed or
reinstalled since no longer matches its record, and the loader refuses it unless the caller
asks for an unverified profile on purpose (`verify` itself, optimize's staged profiles).
"""

import datetime
import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

VERIFIED_FILE = "verified.json"
MANIFEST_FILE = "profile.json"
"""A profile's manifest (`operators.profiles.PROFILE_FILE`); its digest is what a record binds."""


class ProfileVerification(BaseModel):
    """What passed, when, and by which command."""

    model_config = ConfigDict(frozen=True)

    profile_digest: str
    """sha256 of the `profile.json` judged (it lists every file's digest)."""
    verified_by: str
    verified_at: str
    timed: bool
    """Whether the model's time was part of the verdict (it needs CUDA)."""
    report: str | None = None


def manifest_digest(folder: Path) -> str:
    return hashlib.sha256((folder / MANIFEST_FILE).read_bytes()).hexdigest()


def record_verification(
    folder: Path, verified_by: str, timed: bool, report: Path | None = None
) -> ProfileVerification:
    """Mark the profile in `folder`, as it is now, verified."""
    record = ProfileVerification(
        profile_digest=manifest_digest(folder),
        verified_by=verified_by,
        verified_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        timed=timed,
        report=str(report) if report is not None else None,
    )
    path = folder / VERIFIED_FILE
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(record.model_dump(mode="json"), indent=2) + "\n")
    temporary.replace(path)
    return record


def clear_verification(folder: Path) -> None:
    """Mark the profile unverified (after an install, or before and after a verify)."""
    (folder / VERIFIED_FILE).unlink(missing_ok=True)


def unverified_reason(folder: Path) -> str | None:
    """None when the profile in `folder` is verified as it is now, else why it is not."""
    path = folder / VERIFIED_FILE
    if not path.is_file():
        return "no passing `controller verify` since it was installed"
    try:
        record = ProfileVerification.model_validate(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValidationError):
        return f"{VERIFIED_FILE} is malformed"
    if record.profile_digest != manifest_digest(folder):
        return f"it changed since `{record.verified_by}` passed it"
    return None
