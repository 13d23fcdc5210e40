"""Measure a captured operator's baseline error against its FP64 oracle.

Every captured layout is called as the evaluator calls it (`captured_cases.captured_inputs`:
captured strides, viewed in the declared rank) on its fixture and on input sets drawn from
fixed seeds; on each set the production kernel and the reference in the model's dtype are
held to the reference run in FP64, output by output.
"""

from pathlib import Path

import torch

from gates.calibration.contract_file import (
    MeasuredOn,
    OperatorCalibration,
    OutputCalibration,
    reference_digest,
)
from gates.evaluator.captured_cases import CapturedWorkload, captured_inputs
from gates.tasks.captured import captured_axis_sizes
from operators.call_capture import CapturedLayout
from operators.declaration import OperatorDeclaration, as_outputs
from operators.error_measure import max_absolute_error, relative_rms_error
from operators.fp64_oracle import fp64_outputs

DRAWN_SEEDS = (0, 1, 2, 3)
"""Drawn sets per layout, beside its fixture: the largest error over them sets the baseline."""


def input_sets(
    declaration: OperatorDeclaration,
    capture_folder: Path,
    layout: CapturedLayout,
    seeds: tuple[int, ...],
    device: torch.device,
) -> list[list[torch.Tensor]]:
    """The layout's fixture and one set per seed, laid out as the evaluator lays them out."""
    workload = CapturedWorkload(
        uuid=layout.key,
        axes=captured_axis_sizes(declaration, layout.inputs, layout.key),
        inputs=layout.inputs,
        fixture=layout.fixture,
    )
    sets = [captured_inputs(declaration, workload, capture_folder, True, 0, device)]
    for seed in seeds:
        sets.append(captured_inputs(declaration, workload, capture_folder, False, seed, device))
    return sets


def call_params(declaration: OperatorDeclaration, layout: CapturedLayout) -> dict:
    """The declared scalar parameters as the model passed them in this layout's calls."""
    return {
        name: layout.scalars.get(name, default)
        for name, default in declaration.params.items()
        if layout.scalars.get(name, default) is not None
    }


def calibrate_operator(
    declaration: OperatorDeclaration,
    capture_folder: Path,
    layouts: list[CapturedLayout],
    margin: float,
    device: torch.device,
    seeds: tuple[int, ...] = DRAWN_SEEDS,
) -> OperatorCalibration:
    """The operator's calibrated contract from its captured layouts."""
    production = declaration.preferred or declaration.reference
    names = [spec.name for spec in declaration.outputs]
    worst = {name: {"production": 0.0, "reference": 0.0, "absolute": 0.0} for name in names}
    for layout in layouts:
        params = call_params(declaration, layout)
        for inputs in input_sets(declaration, capture_folder, layout, seeds, device):
            oracle = fp64_outputs(declaration.reference, inputs, params)
            with torch.no_grad():
                produced = as_outputs(production(*inputs, **params))
                referenced = as_outputs(declaration.reference(*inputs, **params))
            for name, got, ref, exact in zip(names, produced, referenced, oracle, strict=True):
                figures = worst[name]
                figures["production"] = max(figures["production"], relative_rms_error(got, exact))
                figures["reference"] = max(figures["reference"], relative_rms_error(ref, exact))
                figures["absolute"] = max(figures["absolute"], max_absolute_error(got, exact))
    outputs = []
    for name in names:
        figures = worst[name]
        baseline = max(figures["production"], figures["reference"])
        outputs.append(
            OutputCalibration(
                output=name,
                production_error=figures["production"],
                reference_error=figures["reference"],
                baseline_error=baseline,
                tolerance=(1.0 + margin) * baseline,
                max_absolute_error=figures["absolute"],
            )
        )
    return OperatorCalibration(
        operator=declaration.name,
        reference_sha256=reference_digest(declaration),
        margin=margin,
        measured_on=MeasuredOn(
            layouts=[layout.key for layout in layouts],
            fixtures=True,
            distribution="normal",
            seeds=list(seeds),
            device=str(device),
        ),
        outputs=outputs,
    )
