"""The model-level checks of an optimize batch on profiles staged inside its folder: every
promoted kernel (`profiles/all`), the set without each one (`profiles/without-<op>`), each one
alone where the whole set fails the numerics (`profiles/only-<op>`), and the kept set
(`profiles/kept`), judged by `verify`'s numerical gate and its paired model timing."""

import shutil
from pathlib import Path

from pydantic import BaseModel

from controller.optimize.decision import FULL, without
from controller.optimize.steps import OptimizeSteps
from controller.runs.store import write_json_atomic
from controller.verification.verify import VerifyReport, speed_failures
from examples.paired_timing import PairedTiming, figures_of
from operators import KernelSelection

STAGED = "profiles"
BASELINES = ("none", "stock")
REUSED_TIMING = "timed in the whole set's paired session as"
"""How a kept set's check notes that its figures are the whole set's session's."""


class ModelCheck(BaseModel):
    """`verify` of one set of kernels: numerics, and the model's time where it was timed."""

    numerics: VerifyReport
    alone_numerics: dict[str, bool] = {}
    timing: list[PairedTiming] = []
    speed_failures: list[str] = []

    @property
    def passed(self) -> bool:
        return self.numerics.passed and bool(self.timing) and not self.speed_failures


def install_profile(root: Path, profile: str, exports: dict[str, Path]) -> list[str]:
    """Install `exports` into `root/profile`, replacing what a killed attempt left there."""
    from controller.profile_install import install_export

    for _, export in sorted(exports.items()):
        install_export(export, profile, root, replace=True)
    return sorted(exports)


def publish_kept(
    root: Path, profile: str, exports: dict[str, Path], folder: Path, kept: ModelCheck
) -> list[str]:
    """Install the kept kernels where the user's model loads them, marked verified by the kept
    set's passing check (same sources, same manifest as the staged copy it judged)."""
    from operators.profile_verification import record_verification

    names = install_profile(root, profile, exports)
    record_verification(
        root / profile,
        f"controller optimize {folder.name} (verify kept)",
        bool(kept.timing),
        folder / "verify" / "kept.json",
    )
    return names


def install_staged(folder: Path, profile: str, exports: dict[str, Path]) -> list[str]:
    """The whole set, and the set without each kernel, as profiles inside the batch folder."""
    staged = folder / STAGED
    shutil.rmtree(staged, ignore_errors=True)
    install_profile(staged / "all", profile, exports)
    for operator in exports:
        others = {name: path for name, path in exports.items() if name != operator}
        install_profile(staged / f"without-{operator}", profile, others)
    return sorted(exports)


def _selection(root: Path, profile: str) -> KernelSelection:
    """The profile staged in `root`, or `none` where it holds no kernel."""
    if not (root / profile).is_dir():
        return KernelSelection("none")
    return KernelSelection(profile, tuned_root=root, allow_unverified=True)


def verify_all(
    folder: Path,
    profile: str,
    installed: list[str],
    exports: dict[str, Path],
    steps: OptimizeSteps,
) -> dict:
    """Numerics of the whole set (and of each kernel alone where it fails), and the model's
    time under it, `none`, `stock` and the set without each kernel, in one paired session."""
    staged = folder / STAGED
    full = _selection(staged / "all", profile)
    numerics = steps.numerics(profile, full)
    alone: dict[str, bool] = {}
    if not numerics.passed:  # find which kernels the numerics fail with, one at a time
        for operator in installed:
            root = staged / f"only-{operator}"
            shutil.rmtree(root, ignore_errors=True)
            install_profile(root, profile, {operator: exports[operator]})
            alone[operator] = steps.numerics(profile, _selection(root, profile)).passed
    profiles = {FULL: full, **{name: KernelSelection(name) for name in BASELINES}}
    for operator in installed:
        profiles[without(operator)] = _selection(staged / f"without-{operator}", profile)
    pairs = [(FULL, name) for name in profiles if name != FULL]
    timing = steps.time(profiles, pairs, log=folder / "verify" / "all-timing.log")
    check = _check(numerics, timing, alone)
    write_json_atomic(folder / "verify" / "all.json", check.model_dump(mode="json"))
    return check.model_dump(mode="json")


def verify_kept(
    folder: Path,
    profile: str,
    kept: list[str],
    exports: dict[str, Path],
    whole: ModelCheck,
    steps: OptimizeSteps,
) -> dict:
    """The kept kernels as they will be published; the whole set's check when none dropped.
    Where one was dropped, the kept set is the set without it, whose time the whole set's
    paired session measured beside `none` and `stock`: where the staged files are the same,
    those figures are its timing and only its numerics are checked again."""
    if set(kept) == {name for name in exports}:
        check = whole.model_copy(update={"alone_numerics": {}})
    else:
        root = folder / STAGED / "kept"
        shutil.rmtree(root, ignore_errors=True)
        install_profile(root, profile, {name: exports[name] for name in kept})
        selection = _selection(root, profile)
        timing = _timed_beside_the_whole(folder, profile, kept, exports, whole)
        notes = []
        if timing:
            (dropped,) = set(exports) - set(kept)
            notes.append(f"{REUSED_TIMING} {without(dropped)!r}")
        else:
            profiles = {FULL: selection, **{name: KernelSelection(name) for name in BASELINES}}
            pairs = [(FULL, name) for name in BASELINES]
            timing = steps.time(profiles, pairs, log=folder / "verify" / "kept-timing.log")
        check = _check(steps.numerics(profile, selection), timing, {}, notes)
    write_json_atomic(folder / "verify.json", check.numerics.model_dump(mode="json"))
    write_json_atomic(folder / "verify" / "kept.json", check.model_dump(mode="json"))
    return check.model_dump(mode="json")


def _timed_beside_the_whole(
    folder: Path, profile: str, kept: list[str], exports: dict[str, Path], whole: ModelCheck
) -> list[PairedTiming]:
    """The kept set's figures from the whole set's session where it was timed there (one
    kernel dropped, the staged files identical); else none."""
    from operators.errors import ProfileError

    dropped = set(exports) - set(kept)
    if len(dropped) != 1 or not whole.timing:
        return []
    (operator,) = dropped
    staged = folder / STAGED
    try:  # the same digests, and each folder's bytes what its digests say
        timed = _checked_files(staged / f"without-{operator}" / profile)
        if timed != _checked_files(staged / "kept" / profile):
            return []
    except ProfileError:
        return []
    if any(without(operator) not in timing.round_ms for timing in whole.timing):
        return []
    return [figures_of(t, without(operator), FULL, BASELINES) for t in whole.timing]


def _checked_files(root: Path) -> dict[str, str]:
    """A staged profile's file digests, once its files are checked against them."""
    from operators.profiles import read_profile, verify_files

    profile = read_profile(root)
    verify_files(root, profile)
    return profile.files


def _check(
    numerics: VerifyReport,
    timing: list[PairedTiming],
    alone: dict[str, bool],
    notes: list[str] | None = None,
) -> ModelCheck:
    """`verify`'s latency gate (`speed_failures`) over the timed batches."""
    failures = speed_failures(FULL, timing)
    notes = [*(notes or []), *([] if timing else ["the model was not timed: it needs CUDA"])]
    numerics = numerics.model_copy(
        update={"timing": timing, "speed_failures": failures, "notes": numerics.notes + notes}
    )
    return ModelCheck(
        numerics=numerics, alone_numerics=alone, timing=timing, speed_failures=failures
    )
