"""Installed tuned-kernel profiles: `tuned/<name>/profile.json` plus one package per operator.

A profile loads only if every file matches the digest recorded in `profile.json`, the
profile was tuned on this environment and `controller verify` passed it as it is now
(`operators.profile_verification`); otherwise it refuses with a one-line reason.
"""

import hashlib
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from operators.environment import KernelEnvironment
from operators.errors import ProfileError
from operators.profile_verification import MANIFEST_FILE, unverified_reason

TUNED_ROOT = Path(__file__).resolve().parent.parent / "tuned"
PROFILE_FILE = MANIFEST_FILE


class TunedEntry(BaseModel):
    """Where one operator's tuned kernel lives inside the profile folder."""

    model_config = ConfigDict(frozen=True)

    source: str
    kernel: str = "kernel"
    applies: str = "applies"


class KernelProfile(BaseModel):
    """The contents of `profile.json`."""

    model_config = ConfigDict(frozen=True)

    name: str
    environment: KernelEnvironment
    operators: dict[str, TunedEntry]
    files: dict[str, str]


class TunedKernel:
    """A tuned implementation and the predicate saying which arguments it was verified on."""

    def __init__(self, operator: str, kernel: Callable[..., Any], applies: Callable[..., bool]):
        self.operator = operator
        self.kernel = kernel
        self.applies = applies


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_profile(folder: Path) -> KernelProfile:
    manifest = folder / PROFILE_FILE
    if not manifest.is_file():
        raise ProfileError(f"profile {folder.name!r}: no {PROFILE_FILE} in {folder}")
    try:
        return KernelProfile.model_validate(json.loads(manifest.read_text()))
    except (json.JSONDecodeError, ValidationError) as error:
        first = str(error).splitlines()[0]
        raise ProfileError(
            f"profile {folder.name!r}: {PROFILE_FILE} is malformed: {first}"
        ) from None


def verify_files(folder: Path, profile: KernelProfile) -> None:
    """Every recorded file matches its digest and no unrecorded Python file sits beside them."""
    for relative, digest in sorted(profile.files.items()):
        path = folder / relative
        if not path.is_file():
            raise ProfileError(f"profile {profile.name!r}: {relative} is missing")
        if file_digest(path) != digest:
            raise ProfileError(
                f"profile {profile.name!r}: {relative} does not match its digest in "
                f"{PROFILE_FILE}; reinstall the profile"
            )
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder).as_posix()
        if relative not in profile.files:
            raise ProfileError(f"profile {profile.name!r}: {relative} is not in {PROFILE_FILE}")


def load_profile(
    folder: Path, environment: KernelEnvironment, allow_unverified: bool = False
) -> dict[str, TunedKernel]:
    """Check and import a profile's kernels; refuse a tampered, foreign or unverified profile
    (`allow_unverified` is for the commands that verify it)."""
    profile = read_profile(folder)
    verify_files(folder, profile)
    difference = profile.environment.first_difference(environment)
    if difference is not None:
        raise ProfileError(
            f"profile {profile.name!r} was verified for another environment ({difference}); "
            "tune again on this machine"
        )
    reason = None if allow_unverified else unverified_reason(folder)
    if reason is not None:
        raise ProfileError(
            f"profile {profile.name!r} is not verified ({reason}); run "
            f"`controller verify --profile {profile.name}`"
        )
    kernels = {}
    for operator, entry in sorted(profile.operators.items()):
        if entry.source not in profile.files:
            raise ProfileError(f"profile {profile.name!r}: {entry.source} is not in its files")
        module = _import_file(folder / entry.source, f"tuned_{profile.name}_{operator}")
        kernels[operator] = TunedKernel(
            operator, getattr(module, entry.kernel), getattr(module, entry.applies)
        )
    return kernels


def profile_names(root: Path = TUNED_ROOT) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / PROFILE_FILE).is_file())


def matching_profile(
    root: Path, environment: KernelEnvironment, allow_unverified: bool = False
) -> str | None:
    """The first installed profile tuned for this environment and verified as it is now, for
    `kernel_profile=auto`."""
    for name in profile_names(root):
        if read_profile(root / name).environment.first_difference(environment) is not None:
            continue
        if allow_unverified or unverified_reason(root / name) is None:
            return name
    return None


def _import_file(path: Path, module_name: str):
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProfileError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
