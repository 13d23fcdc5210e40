"""The judge process: recompute the references and hold the candidate's outputs to them.

It never imports the solution; it reads the candidate's outputs as plain tensors
(`weights_only` loading), so nothing the solution wrote can run here.
"""

from pathlib import Path

import torch

from gates.evaluator.captured_cases import (
    case_inputs,
    load_captured,
    output_layout_mismatch,
    timed_declaration,
)
from gates.evaluator.cases import plan_cases
from gates.evaluator.detectors import CheatDetected
from gates.evaluator.detectors.hardcoding import ShapeSpecificHardcoding
from gates.evaluator.detectors.input_mutation import InputMutated
from gates.evaluator.detectors.replay import TimedOutputWrong
from gates.evaluator.detectors.table import finding_of
from gates.evaluator.diagnosis import diagnose, mostly_gross
from gates.evaluator.fresh_pool import drawn_sets, pool_seeds
from gates.evaluator.guard import REPEAT_SUFFIX, tensor_digest
from gates.evaluator.phase_clock import PhaseClock
from gates.evaluator.protocol import (
    CandidateReport,
    EvaluationRequest,
    JudgeReport,
    evaluator_fault,
)
from gates.evaluator.replay_witnesses import WITNESS_PREFIX
from operators.accuracy import AccuracyCheck


class CaseFailure(Exception):
    """A case broke the contract without showing a known cheat; `gross` when no other draw
    would pass it (a wrong layout, values never computed), not a near miss."""

    def __init__(self, status: str, reason: str, gross: bool = True) -> None:
        super().__init__(reason)
        self.status = status
        self.gross = gross


def run_judge(request: EvaluationRequest, declaration, candidate: CandidateReport) -> JudgeReport:
    """Check every case; cheats first, then the contract (`operators.accuracy`, against the
    FP64 oracle on every set, the captured fixtures included), then hidden-only failures."""
    header = {
        "nonce": request.nonce,
        "task_digest": request.task_digest,
        "solution_digest": request.solution_digest,
    }
    clock = PhaseClock()
    device = torch.device(request.device)
    captured = load_captured(Path(request.task))
    cases = plan_cases(declaration, request.nonce, request.device, tuple(captured))
    outputs = torch.load(candidate.outputs_file, weights_only=True, map_location="cpu")
    witnessed = {k: outputs.pop(k) for k in list(outputs) if k.startswith(WITNESS_PREFIX)}
    records = {record.key: record for record in candidate.cases}
    clock.lap("load")
    errors = Errors()
    hidden_failures = dict(candidate.hidden_errors)
    checked = 0
    try:
        for case in cases:
            if case.key in candidate.hidden_errors:
                continue
            record, produced = records.get(case.key), outputs.get(case.key)
            if record is None or produced is None:
                raise CaseFailure("RUNTIME_ERROR", f"{case.key}: the candidate reported no output")
            others = {k: v for k, v in outputs.items() if k.split(REPEAT_SUFFIX)[0] != case.key}
            try:
                repeat = outputs.get(case.key + REPEAT_SUFFIX)
                inputs = case_inputs(declaration, case, device, request, captured)
                clock.lap("inputs")
                mismatch = output_layout_mismatch(declaration, case, produced, captured)
                if mismatch is not None:
                    raise CaseFailure("INCORRECT_SHAPE", mismatch)
                check = AccuracyCheck.on_inputs(declaration, inputs)
                clock.lap("oracle")
                _check_case(
                    declaration, case, inputs, record, produced, repeat, others, errors, check
                )
                clock.lap("checks")
            except (CaseFailure, CheatDetected) as failure:
                near_miss = isinstance(failure, CaseFailure) and not failure.gross
                if not case.hidden or near_miss:
                    raise  # a near miss on a hidden size is a numerical error, not hardcoding
                hidden_failures[case.key] = str(failure)
            checked += 1
        if hidden_failures:
            key, why = next(iter(hidden_failures.items()))
            raise ShapeSpecificHardcoding(f"visible workloads pass but hidden {key} fails ({why})")
        timing = candidate.timing
        if timing is not None:
            timed = timed_declaration(declaration, captured)
            check_witnesses(
                request.nonce, timed, candidate.witnesses, list(timing.workloads), witnessed,
                device, errors,
            )  # fmt: skip
            clock.lap("witnesses")
    except CheatDetected as cheat:
        finding = finding_of(cheat)
        return JudgeReport(
            **header,
            status="REJECTED",
            reason=f"{finding.detector}: {cheat.reason}",
            findings=[finding],
            cases_checked=checked,
        )
    except Exception as error:  # the evaluator's own code failed: not the solution's fault
        if not isinstance(error, CaseFailure):
            return JudgeReport(**header, status="EVALUATOR_ERROR", reason=evaluator_fault(error))
        failure = error
        return JudgeReport(
            **header,
            status=failure.status,
            reason=str(failure),
            cases_checked=checked,
            max_absolute_error=errors.absolute,
            max_relative_error=errors.relative,
        )
    return JudgeReport(
        **header,
        status="PASSED",
        cases_checked=checked,
        max_absolute_error=errors.absolute,
        max_relative_error=errors.relative,
        phase_seconds=clock.laps,
    )


class Errors:
    """The largest absolute and relative errors seen so far."""

    def __init__(self) -> None:
        self.absolute = 0.0
        self.relative = 0.0

    def add(self, got: torch.Tensor, expected: torch.Tensor) -> None:
        """Fold in one output's errors over the elements where both values are finite (one
        FP64 pass, no masked copies: full-size outputs make this the judge's largest cost)."""
        if got.numel() == 0:
            return
        got64, expected64 = got.double(), expected.double()
        error = torch.sub(got64, expected64).abs_()
        if got.element_size() < 8:  # two finite values from a narrower type: a finite error
            finite = torch.isfinite(error)
        else:
            finite = torch.isfinite(got64) & torch.isfinite(expected64)
        infinite = finite.logical_not_()
        error.masked_fill_(infinite, 0.0)
        relative = error / expected64.abs().clamp_min_(1e-12)
        relative.masked_fill_(infinite, 0.0)
        self.absolute = max(self.absolute, float(error.max()))
        self.relative = max(self.relative, float(relative.max()))


def _check_case(declaration, case, inputs, record, produced, repeat, others, errors, check) -> None:
    before = [tensor_digest(t) for t in inputs]
    if record.input_digests_after != before:
        changed = [
            spec.name
            for spec, a, b in zip(
                declaration.inputs, before, record.input_digests_after, strict=False
            )
            if a != b
        ]
        raise InputMutated(f"{case.key}: inputs {changed or '?'} changed during the call")
    # A repeat byte-identical to the first outputs gets the same verdict: checked once.
    same_repeat = repeat is not None and _digests(repeat) == _digests(produced)
    checked = [produced] if repeat is None or same_repeat else [produced, repeat]
    _hold_to_contract(declaration, case.key, checked, check, others, errors)
    if record.repeat_output_digests is not None:
        if repeat is None:
            raise CaseFailure("INCORRECT_NUMERICAL", f"{case.key}: the repeated call is missing")
        if not same_repeat:
            raise CaseFailure(
                "INCORRECT_NUMERICAL", f"{case.key}: two identical calls gave different outputs"
            )


def check_witnesses(
    nonce: str, timed, witnesses, timed_workloads: list[str], outputs: dict, device, errors
) -> None:
    """Hold every witness of a timed call to the reference for its set, drawn again here
    from the nonce (`replay_witnesses.py`): the comparison at each timed call ran where the
    solution's kernels could reach it, this one does not. Every timed workload must have a
    witness; a grossly wrong one is a timed output computed wrong, a near miss a numerical
    error, as on a case."""
    seen = {witness.workload for witness in witnesses}
    unwitnessed = [name for name in timed_workloads if name not in seen]
    if unwitnessed:
        raise TimedOutputWrong(f"no replayed outputs of {unwitnessed[0]} reached the judge")
    workloads = {workload.name: workload for workload in timed.workloads}
    drawn_for, sets = None, []  # the last pool drawn again (witnesses come pool by pool)
    for witness in witnesses:
        workload, produced = workloads.get(witness.workload), outputs.get(witness.key)
        if workload is None or produced is None or witness.set_index >= witness.pool_sets:
            raise TimedOutputWrong(f"witness {witness.key} names no timed call it could have")
        pool = (workload.name, witness.round_index, witness.pool_sets)
        if pool != drawn_for:
            seeds = pool_seeds(nonce, workload.name, witness.round_index)
            drawn_for, sets = pool, drawn_sets(timed, workload, seeds, witness.pool_sets, device)
        check = AccuracyCheck.on_inputs(timed, sets[witness.set_index])
        call = f"round {witness.round_index} set {witness.set_index}, {witness.figure}"
        where = f"{workload.name} timed call ({call})"
        try:
            _hold_to_contract(timed, where, [produced], check, {}, errors)
        except CaseFailure as failure:
            if failure.gross:
                raise TimedOutputWrong(
                    f"{failure}; the judge drew the set again, the comparison at the timed call "
                    "had passed it"
                ) from None
            raise


def _hold_to_contract(declaration, where: str, checked: list, check, others, errors):
    """Hold each output list in `checked` to the contract (`operators.accuracy`), on the device
    the oracle ran on; the first failure is diagnosed against the reference in the model's
    dtype, which names a known cheat where its pattern shows one."""
    for outputs in checked:
        _check_outputs(declaration, where, outputs, check, others, errors)


def _digests(tensors) -> list[str]:
    return [tensor_digest(t) for t in tensors]


def _check_outputs(declaration, where: str, produced, check, others, errors: Errors) -> None:
    if len(produced) != len(check.reference):
        raise CaseFailure(
            "INCORRECT_SHAPE", f"{where}: {len(produced)} outputs, not {len(check.reference)}"
        )
    for index, (spec, got) in enumerate(zip(declaration.outputs, produced, strict=True)):
        expected = check.reference[index]
        if got.dtype != expected.dtype:
            raise CaseFailure("INCORRECT_DTYPE", f"{where}: {spec.name} is {got.dtype}")
        if got.shape != expected.shape:
            raise CaseFailure("INCORRECT_SHAPE", f"{where}: {spec.name} {tuple(got.shape)}")
        got = got.to(expected.device)
        violation = check.output_violation(index, spec.name, got)
        if violation is not None:
            bad = check.bad_elements(index, got)
            peers = {k: v[index].to(expected.device) for k, v in others.items()}
            cheat = diagnose(f"{where}: {spec.name}", got, expected, bad, peers)
            if cheat is not None:
                raise cheat
            gross = mostly_gross(got, expected, bad)
            raise CaseFailure(
                "INCORRECT_NUMERICAL", f"{where}: {violation.describe()}", gross=gross
            )
        errors.add(got, expected)
