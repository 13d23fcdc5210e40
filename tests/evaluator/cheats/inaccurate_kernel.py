"""Not a cheat: an honest kernel that is slightly too inaccurate (it adds a large epsilon), so
some rows of some draws break the contract and others do not. It must be reported as
INCORRECT_NUMERICAL whatever the draw, never labelled as a cheat."""

import torch

from .rms_kernel import launch


def rms_norm(x, weight, eps=1e-6):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return launch(x, weight, 0.02, out)
