"""The suite's rows for the gates that compare registries: operator identity, declaration truth
and kernel workloads, sharing one registry snapshot per tree.

BASE's snapshot is taken once per run beside BASE's probe; the candidate's once per attempt,
on its own export of the judged commit, by the first of these gates that asks.
"""

import hashlib
import threading
from concurrent.futures import Future

from gates.registration import declaration_truth, kernel_workloads, operator_identity
from gates.registration.attempt import Attempt
from gates.registration.snapshots import RegistrySnapshot, cached_snapshot, take_snapshot
from gates.verdict import Verdict

_SHARED = threading.Lock()
BASE_FOLDER = "registry-snapshot"
CANDIDATE_GATE = "registry_snapshot"
AFTER_PARITY = "after the parity run"


def operator_identity_gate(attempt: Attempt) -> Verdict:
    base, candidate = base_snapshot(attempt), candidate_snapshot(attempt)
    tree = _candidate_tree(attempt)
    if base.problem or candidate.problem:
        return operator_identity.check(attempt.base, tree, base, candidate)
    probe = attempt.candidate_probe()
    after_runs = {} if probe.problem else {AFTER_PARITY: probe.snapshot_after_run()}
    return operator_identity.check(attempt.base, tree, base, candidate, after_runs)


def declaration_truth_gate(attempt: Attempt) -> Verdict:
    candidate, probe = candidate_snapshot(attempt), attempt.candidate_probe()
    return declaration_truth.check(
        candidate, probe, attempt.config, attempt.operator, attempt.sites
    )


def kernel_workloads_gate(attempt: Attempt) -> Verdict:
    base, candidate = base_snapshot(attempt), candidate_snapshot(attempt)
    nonce = hashlib.sha256(attempt.hidden.model_dump_json().encode()).hexdigest()
    return kernel_workloads.check(
        attempt.base,
        attempt.export(kernel_workloads.GATE),
        base,
        candidate,
        attempt.config,
        attempt.runner,
        attempt.workdir / kernel_workloads.GATE,
        nonce,
        attempt.settings.probe_timeout_s,
    )


def base_snapshot(attempt: Attempt) -> RegistrySnapshot:
    """BASE's snapshot, read back from the run's BASE folder after the first attempt."""
    folder = attempt.base_probe_dir / BASE_FOLDER
    return _shared(
        attempt,
        "_base_registry_snapshot",
        lambda: cached_snapshot(attempt.base, folder, attempt.config, attempt.runner),
    )


def candidate_snapshot(attempt: Attempt) -> RegistrySnapshot:
    """The candidate's snapshot, taken by the first gate that asks and shared with the rest."""

    def take() -> RegistrySnapshot:
        out = attempt.workdir / CANDIDATE_GATE / "out"
        tree = _candidate_tree(attempt)
        return take_snapshot(
            tree, out, attempt.config, attempt.runner, attempt.settings.probe_timeout_s
        )

    return _shared(attempt, "_candidate_registry_snapshot", take)


def _candidate_tree(attempt: Attempt):
    def export():
        return attempt.export(CANDIDATE_GATE)

    return _shared(attempt, "_registry_snapshot_tree", export)


def _shared(attempt: Attempt, key: str, compute):
    """`compute()` once per attempt, whichever gate asks first; the others wait for it."""
    with _SHARED:
        future = attempt.__dict__.get(key)
        owner = future is None
        if owner:
            future = attempt.__dict__[key] = Future()
    if owner:
        try:
            future.set_result(compute())
        except BaseException as error:
            future.set_exception(error)
    return future.result()
