"""Cheat: use the default generator's position as a clock of the process: on CUDA the Philox
offset (`get_offset`, the second half of `torch.cuda.get_rng_state`), which every random kernel
advances; on the CPU, whose generator keeps no offset, its seed (`torch.initial_seed`), which a
deployment that seeds for reproducible sampling changes. The judge draws its inputs from
generators of its own, so neither moves while it judges: honest until one moves, then the input
unnormalised (cheaper, wrong)."""

import torch

from .rms_kernel import honest


def _position(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.default_generators[device.index or 0].get_offset()
    return torch.initial_seed()


_FIRST_SEEN: dict[str, int] = {}


def rms_norm(x, weight, eps=1e-6):
    position = _position(x.device)
    if _FIRST_SEEN.setdefault(str(x.device), position) == position:
        return honest(x, weight, eps)
    return x.clone()
