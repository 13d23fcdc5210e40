"""The direct call-site calls redraw every input of the call's batch, nested ones included, so
a call site that takes its modulations as tuples is called with inputs the model could make."""

from typing import NamedTuple

import torch

from gates.registration.drawn_inputs import drawn_inputs


class Pair(NamedTuple):
    scale: torch.Tensor
    shift: torch.Tensor


def test_tensors_in_lists_tuples_dicts_and_named_tuples_take_the_drawn_batch():
    hidden = torch.randn(1, 8, 4)
    modulations = [
        (torch.randn(1, 4), torch.randn(1, 4)),
        Pair(torch.ones(1, 4), torch.zeros(1, 4)),
    ]
    table = torch.randn(8, 4)  # another leading size: kept
    args, kwargs = drawn_inputs(
        ("self", hidden, modulations, table), {"extra": {"gate": torch.randn(1, 4)}}, 5, 0, torch
    )
    assert args[0] == "self" and args[1].shape == (5, 8, 4) and args[3] is table
    (first, second), pair = args[2]
    assert first.shape == second.shape == (5, 4)
    assert isinstance(pair, Pair) and pair.scale.shape == pair.shift.shape == (5, 4)
    assert kwargs["extra"]["gate"].shape == (5, 4)
    assert not torch.equal(first[0], modulations[0][0][0])  # drawn, not repeated


def test_the_same_seed_draws_the_same_inputs():
    inputs = ((torch.randn(2, 3), [torch.randn(2, 3)]), {})
    first, _ = drawn_inputs(*inputs, 4, 7, torch)
    again, _ = drawn_inputs(*inputs, 4, 7, torch)
    assert torch.equal(first[0], again[0]) and torch.equal(first[1][0], again[1][0])
