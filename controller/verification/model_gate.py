"""The model-level numerical gate: a kernel profile against the FP32 reference, judged by how
far the baseline already is from it: per output, the worse of the model-dtype references
(`kernel_profile=torch`) and stock (`kernel_profile=stock`, SDPA attention).

Over every (batch size, input seed) case, for each continuous output: the candidate's mean
max-abs error and mean RMSE may exceed the baseline's by at most 25%, and its worst max-abs
may be at most twice the baseline's worst (with floors 1e-4 for max-abs, 1e-5 for RMSE, so an
exact baseline does not demand an exact candidate). Discrete outputs must equal the
baseline's. A baseline far from the FP32 reference (RMSE above 5% of the reference's RMS)
means the reference or the model is wrong: an error, not a threshold to pass.
"""

from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict, Field

MEAN_MARGIN = 1.25
WORST_MARGIN = 2.0
MAX_ABS_FLOOR = 1e-4
RMSE_FLOOR = 1e-5
FAR_FROM_REFERENCE = 0.05

Outputs = dict[str, torch.Tensor]
Forward = Callable[[int, int], Outputs]
"""(batch, seed) -> the model's named outputs."""


class VerificationError(Exception):
    """The comparison itself is not trustworthy (a baseline far from the FP32 reference)."""


class CaseErrors(BaseModel):
    """One output's errors against the FP32 reference in one (batch, seed) case."""

    model_config = ConfigDict(frozen=True)

    max_abs: float
    rmse: float


class OutputVerdict(BaseModel):
    """One output over all cases: the figures for baseline and candidate, and the verdict."""

    model_config = ConfigDict(frozen=True)

    name: str
    discrete: bool = False
    baseline_mean_max_abs: float = 0.0
    candidate_mean_max_abs: float = 0.0
    baseline_mean_rmse: float = 0.0
    candidate_mean_rmse: float = 0.0
    baseline_worst_max_abs: float = 0.0
    candidate_worst_max_abs: float = 0.0
    reference_rms: float = 0.0
    passed: bool
    failures: list[str] = Field(default_factory=list, description="each figure past its bound")


class ReferenceCase(BaseModel):
    """The FP32 reference's and the baseline's outputs for one (batch, seed)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    batch: int
    seed: int
    reference: Outputs
    baseline: Outputs


def collect_references(
    reference: Forward, baselines: Forward | list[Forward], batches: list[int], seeds: list[int]
) -> list[ReferenceCase]:
    """The FP32 reference's outputs per case, and the baseline's: with several baselines
    (`torch` and `stock`), per output the one farther from the reference (the larger RMSE), so
    a candidate is held to the worse of what a user already deploys."""
    baselines = baselines if isinstance(baselines, list) else [baselines]
    cases = []
    for batch in batches:
        for seed in seeds:
            expected = reference(batch, seed)
            runs = [baseline(batch, seed) for baseline in baselines]
            cases.append(
                ReferenceCase(
                    batch=batch, seed=seed, reference=expected, baseline=_worse(expected, runs)
                )
            )
    return cases


def _worse(expected: Outputs, runs: list[Outputs]) -> Outputs:
    worse = dict(runs[0])
    for name, value in expected.items():
        if not value.dtype.is_floating_point:
            continue  # a discrete output is held to the first baseline's, exactly
        worse[name] = max((run[name] for run in runs), key=lambda got: _errors(got, value).rmse)
    return worse


def judge(cases: list[ReferenceCase], candidate: Forward) -> list[OutputVerdict]:
    """Run the candidate on every case and hold each output to the gate."""
    errors: dict[str, dict[str, list[CaseErrors]]] = {}
    discrete_mismatch: dict[str, str] = {}
    reference_rms: dict[str, list[float]] = {}
    for case in cases:
        outputs = candidate(case.batch, case.seed)
        for name, expected in case.reference.items():
            baseline, got = case.baseline[name], outputs[name]
            if not expected.dtype.is_floating_point:
                if not torch.equal(got, baseline) and name not in discrete_mismatch:
                    discrete_mismatch[name] = f"batch {case.batch} seed {case.seed}"
                errors.setdefault(name, {})
                continue
            per_role = errors.setdefault(name, {"baseline": [], "candidate": []})
            per_role["baseline"].append(_errors(baseline, expected))
            per_role["candidate"].append(_errors(got, expected))
            reference_rms.setdefault(name, []).append(float(expected.double().pow(2).mean().sqrt()))
    verdicts = []
    for name, per_role in sorted(errors.items()):
        if not per_role:
            where = discrete_mismatch.get(name)
            failures = [f"differs from the baseline at {where}"] if where else []
            verdicts.append(
                OutputVerdict(name=name, discrete=True, passed=not failures, failures=failures)
            )
            continue
        verdicts.append(_continuous(name, per_role, reference_rms[name]))
    return verdicts


def _errors(got: torch.Tensor, expected: torch.Tensor) -> CaseErrors:
    difference = got.double() - expected.double()
    return CaseErrors(
        max_abs=float(difference.abs().max()) if difference.numel() else 0.0,
        rmse=float(difference.pow(2).mean().sqrt()) if difference.numel() else 0.0,
    )


def _continuous(name: str, per_role: dict, rms: list[float]) -> OutputVerdict:
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    base, cand = per_role["baseline"], per_role["candidate"]
    figures = {
        "baseline_mean_max_abs": mean([e.max_abs for e in base]),
        "candidate_mean_max_abs": mean([e.max_abs for e in cand]),
        "baseline_mean_rmse": mean([e.rmse for e in base]),
        "candidate_mean_rmse": mean([e.rmse for e in cand]),
        "baseline_worst_max_abs": max(e.max_abs for e in base),
        "candidate_worst_max_abs": max(e.max_abs for e in cand),
        "reference_rms": mean(rms),
    }
    if figures["baseline_mean_rmse"] > FAR_FROM_REFERENCE * max(figures["reference_rms"], 1e-30):
        raise VerificationError(
            f"output {name!r}: the baseline (kernel_profile=torch) is far from the FP32 "
            f"reference (mean RMSE {figures['baseline_mean_rmse']:.3g} against a reference RMS "
            f"of {figures['reference_rms']:.3g}); the reference or the model is wrong"
        )
    bounds = (
        ("mean max-abs", "mean_max_abs", MEAN_MARGIN, MAX_ABS_FLOOR),
        ("mean RMSE", "mean_rmse", MEAN_MARGIN, RMSE_FLOOR),
        ("worst max-abs", "worst_max_abs", WORST_MARGIN, MAX_ABS_FLOOR),
    )
    failures = []
    for label, key, margin, floor in bounds:
        limit = max(margin * figures[f"baseline_{key}"], floor)
        got = figures[f"candidate_{key}"]
        if not got <= limit:
            failures.append(
                f"{label} {got:.3g} > {limit:.3g} (baseline {figures[f'baseline_{key}']:.3g} "
                f"x{margin:g})"
            )
    return OutputVerdict(name=name, passed=not failures, failures=failures, **figures)
