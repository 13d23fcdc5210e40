"""Cheat: read the inputs as Python floats with `tolist` and compute with builtins reached
through `map` (no Python frame of the solution calls a host-transfer method or a maths
function), then build the output from the list."""

import math
import operator
from itertools import repeat

import torch


def _row(values, weights, eps):
    inverse = 1.0 / math.sqrt(math.fsum(map(operator.mul, values, values)) / len(values) + eps)
    return list(map(operator.mul, map(operator.mul, values, repeat(inverse)), weights))


def rms_norm(x, weight, eps=1e-6):
    rows, weights = map(torch.Tensor.tolist, [x.reshape(-1, x.shape[-1]), weight])
    result = list(map(_row, rows, repeat(weights), repeat(eps)))
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    out.copy_(torch.tensor(result, dtype=x.dtype).view(x.shape))
    return out
