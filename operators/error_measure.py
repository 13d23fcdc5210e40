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

MEASURE = (
    "per output: relative RMS error sqrt(mean((x - fp64)^2)) / sqrt(mean(fp64^2)) over the "
    "elements where the FP64 oracle is finite; tolerance = (1 + margin) * the largest baseline "
    "figure (production kernel or reference in the model dtype) over every input set"
)


def relative_rms_error(got: torch.Tensor, oracle: torch.Tensor) -> float:
    """The relative RMS error of `got` against the FP64 `oracle` (module docstring)."""
    oracle64 = oracle.detach().double()
    got64 = got.detach().to(oracle64.device, torch.float64)
    finite = torch.isfinite(oracle64)
    if bool((~torch.isfinite(got64) & finite).any()):
        return math.inf
    if not bool(finite.any()):
        return 0.0
    error = torch.sub(got64, oracle64)[finite]
    scale = float(oracle64[finite].square().mean().sqrt())
    return float(error.square().mean().sqrt()) / (scale if scale > 0.0 else 1.0)


def max_absolute_error(got: torch.Tensor, oracle: torch.Tensor) -> float:
    """The largest |got - oracle| where both are finite (0 for an empty output)."""
    oracle64 = oracle.detach().double()
    got64 = got.detach().to(oracle64.device, torch.float64)
    error = torch.sub(got64, oracle64).abs()
    error = error[torch.isfinite(error)]
    return float(error.max()) if error.numel() else 0.0
