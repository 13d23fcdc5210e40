"""Run all eight registration gates on one candidate, so a failed attempt's feedback is complete.

The candidate's parity probe runs once and feeds the structure, ATen sequence, registry hits
and bit-exact gates; BASE's probe runs once per run and is read back afterwards.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gates.registration import (
    aten_sequence,
    bit_parity,
    effectiveness,
    registry_hits,
    ruff_check,
    scope,
    structure,
    target_tests,
)
from gates.registration.call_sites import CallSite
from gates.registration.commands import CommandRunner
from gates.registration.declared import reference_location
from gates.registration.probes import cached_probe, run_probe
from gates.target import TargetConfig
from gates.verdict import Verdict


class RegistrationRequest(BaseModel):
    """What a registration run asks for: one operator, the call sites to route through it."""

    model_config = ConfigDict(frozen=True)

    operator: str
    call_sites: tuple[CallSite, ...]


class GateSettings(BaseModel):
    """Timeouts of the gates that run target code."""

    model_config = ConfigDict(frozen=True)

    test_timeout_s: float = 300
    probe_timeout_s: float = 300


def check_attempt(
    base: Path,
    candidate: Path,
    request: RegistrationRequest,
    config: TargetConfig,
    runner: CommandRunner,
    workdir: Path,
    base_probe_dir: Path,
    settings: GateSettings | None = None,
) -> list[Verdict]:
    """Every gate's verdict on `candidate`, in the order of `GATE_NAMES`."""
    settings = settings or GateSettings()
    workdir.mkdir(parents=True, exist_ok=True)
    operator, sites = request.operator, list(request.call_sites)
    started = time.monotonic()
    reference = reference_location(candidate, config, operator)
    with ThreadPoolExecutor(max_workers=4) as pool:
        base_job = pool.submit(cached_probe, base, base_probe_dir, config, operator, runner)
        candidate_job = pool.submit(
            run_probe,
            candidate,
            workdir / "probe",
            config,
            operator,
            runner,
            settings.probe_timeout_s,
        )
        tests_job = pool.submit(
            target_tests.check, candidate, config, runner, settings.test_timeout_s
        )
        effective_job = None
        if reference is not None:  # known from the source: no need to wait for the probe
            effective_job = pool.submit(
                effectiveness.check,
                base,
                candidate,
                None,
                runner,
                workdir,
                settings.test_timeout_s,
                reference,
            )
        base_probe, candidate_probe = base_job.result(), candidate_job.result()
        probes_seconds = time.monotonic() - started
        if effective_job is None:
            effective = effectiveness.check(
                base, candidate, candidate_probe, runner, workdir, settings.test_timeout_s
            )
        else:
            effective = effective_job.result()
        tested = tests_job.result()
    probed = {"seconds": probes_seconds}
    return [
        scope.check(base, candidate, config),
        structure.check(base, candidate, config, operator, sites, candidate_probe),
        ruff_check.check(base, candidate),
        tested,
        effective,
        _timed(aten_sequence.check(base_probe, candidate_probe, config), probed),
        _timed(registry_hits.check(candidate_probe, config, operator, sites), probed),
        _timed(bit_parity.check(base_probe, candidate_probe, config), probed),
    ]


def _timed(verdict: Verdict, probed: dict) -> Verdict:
    details = {**verdict.details, "probe": probed}
    return verdict.model_copy(update={"details": details, "seconds": probed["seconds"]})
