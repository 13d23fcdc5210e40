"""The reference mutations the effectiveness gate relies on rewrite what they claim to."""

import pytest

from gates.registration.mutations import MutationError, mutate

SOURCE = """
import torch
import torch.nn.functional as F


def gelu(x):
    return F.gelu(x, approximate="tanh")


def norm(x, weight):
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True))
    return (y * weight).to(x.dtype)


def staged(x):
    y = torch.tanh(x)
    return y
"""


def test_scaling_wraps_the_return_value():
    scaled = mutate(SOURCE, "gelu", "scaled")
    assert "return _scaled_by_the_effectiveness_gate(F.gelu(x, approximate='tanh'))" in scaled
    import torch

    x = torch.tensor([0.5, -1.0], dtype=torch.float64)
    assert torch.equal(run(scaled, "gelu", x), run(SOURCE, "gelu", x) * 1.001)
    assert "return y * weight * 1.001" in mutate(
        "def norm(y, weight):\n    return y * weight\n", "norm", "scaled"
    )


def test_dropping_a_module_function_returns_its_input():
    assert "    return x\n" in mutate(SOURCE, "gelu", "last_operation_dropped")


def test_dropping_a_method_returns_its_receiver():
    assert "return y * weight\n" in mutate(SOURCE, "norm", "last_operation_dropped")


def test_dropping_follows_a_returned_name_to_its_assignment():
    assert "    y = x\n    return y" in mutate(SOURCE, "staged", "last_operation_dropped")


def test_an_unknown_function_is_refused():
    with pytest.raises(MutationError, match="missing is not a function"):
        mutate(SOURCE, "missing", "scaled")


PAIR_SOURCE = """
from typing import NamedTuple

import torch


def pair(x):
    y = torch.tanh(x)
    return y, x.to(torch.float32)


def computed(x):
    return tuple(t * 2 for t in (x, x + 1))


def nested(x):
    return x * 2, (x, x + 1)


def named(x):
    return {"doubled": x * 2, "pair": Pair(x, x + 1)}


class Pair(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor
"""


def run(source: str, name: str, *args):
    namespace: dict = {}
    exec(compile(source, "<mutant>", "exec"), namespace)
    return namespace[name](*args)


def test_a_returned_tuple_literal_is_perturbed_one_output_at_a_time():
    import torch

    from gates.registration.mutations import returned_outputs

    assert returned_outputs(PAIR_SOURCE, "pair") == 2
    assert returned_outputs(SOURCE, "gelu") is None
    x = torch.tensor([0.5, 1.0], dtype=torch.float64)
    y, z = run(PAIR_SOURCE, "pair", x)
    scaled_first = run(mutate(PAIR_SOURCE, "pair", "scaled", 0), "pair", x)
    assert torch.equal(scaled_first[0], y * 1.001) and torch.equal(scaled_first[1], z)
    dropped_second = run(mutate(PAIR_SOURCE, "pair", "last_operation_dropped", 1), "pair", x)
    assert torch.equal(dropped_second[0], y) and dropped_second[1].dtype == torch.float64
    dropped_first = run(mutate(PAIR_SOURCE, "pair", "last_operation_dropped", 0), "pair", x)
    assert torch.equal(dropped_first[0], x) and torch.equal(dropped_first[1], z)
    doubled, (same, shifted) = run(mutate(PAIR_SOURCE, "nested", "scaled", 1), "nested", x)
    assert torch.equal(doubled, x * 2) and torch.equal(shifted, (x + 1) * 1.001)


def test_a_computed_tuple_is_scaled_item_by_item_not_made_to_raise():
    import torch

    x = torch.tensor([0.5, 1.0], dtype=torch.float64)
    first, second = run(mutate(PAIR_SOURCE, "computed", "scaled"), "computed", x)
    assert torch.equal(first, x * 2 * 1.001) and torch.equal(second, (x + 1) * 2 * 1.001)
    scaled = run(mutate(PAIR_SOURCE, "named", "scaled"), "named", x)
    assert torch.equal(scaled["doubled"], x * 2 * 1.001)
    assert type(scaled["pair"]).__name__ == "Pair"
    assert torch.equal(scaled["pair"].second, (x + 1) * 1.001)
