"""How far one output lies from its FP64 oracle, as one number per output.

The measure is the relative RMS error: sqrt(mean((x - o)^2)) / sqrt(mean(o^2)) over the
elements where the oracle o is finite, x and o in FP64 (divided by 1 where the oracle is all
zeros). A kernel that rounds its result to BF16 once has about 2^-9 of it; one BF16 step off
on every element has about four times that; computing in a narrower precision shows as a
larger figure even where every element stays within the BF16 rule. The largest absolute error
is recorded beside it for readers; it does not decide. A non-finite value where the oracle is
finite makes the error infinite.
"""

import math

import torch
from pydantic import BaseModel, ConfigDict

MEASURE = (
    "per output: relative RMS error sqrt(mean((x - fp64)^2)) / sqrt(mean(fp64^2)) over the "
    "elements where the FP64 oracle is finite; tolerance = (1 + margin) * the largest baseline "
    "figure (production kernel or reference in the model dtype) over every input set"
)


class ErrorFigures(BaseModel):
    """How far one output lies from the oracle on the finite elements, and whether any
    element is not finite where the oracle and the reference in the model's dtype are."""

    model_config = ConfigDict(frozen=True)

    rms: float
    max_abs: float
    broken: int = 0


def error_figures(
    got: torch.Tensor, exact: torch.Tensor, reference: torch.Tensor | None = None
) -> ErrorFigures:
    """RMS and largest absolute error against the FP64 `exact` over the elements where it (and
    the `reference` in the model's dtype, when given) is finite; `broken` counts elements not
    finite there."""
    exact = exact.detach().double()
    got64 = got.detach().to(exact.device, torch.float64)
    measured = torch.isfinite(exact)
    if reference is not None:
        measured &= torch.isfinite(reference.detach().to(exact.device, torch.float64))
    if not bool(measured.any()):
        return ErrorFigures(rms=0.0, max_abs=0.0)
    broken = int((measured & ~torch.isfinite(got64)).sum())
    error = torch.sub(got64, exact)[measured & torch.isfinite(got64)].abs_()
    if not error.numel():
        return ErrorFigures(rms=0.0, max_abs=0.0, broken=broken)
    return ErrorFigures(
        rms=float(error.square().mean().sqrt()), max_abs=float(error.max()), broken=broken
    )


def relative_rms_error(got: torch.Tensor, oracle: torch.Tensor) -> float:
    """The relative RMS error of `got` against the FP64 `oracle` (module docstring)."""
    figures = error_figures(got, oracle)
    if figures.broken:
        return math.inf
    finite = oracle.detach().double()
    finite = finite[torch.isfinite(finite)]
    scale = float(finite.square().mean().sqrt()) if finite.numel() else 0.0
    return figures.rms / (scale if scale > 0.0 else 1.0)


def max_absolute_error(got: torch.Tensor, oracle: torch.Tensor) -> float:
    """The largest |got - oracle| where both are finite (0 for an empty output)."""
    return error_figures(got, oracle).max_abs
