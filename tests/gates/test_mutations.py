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
    assert "return F.gelu(x, approximate='tanh') * 1.001" in mutate(SOURCE, "gelu", "scaled")


def test_dropping_a_module_function_returns_its_input():
    assert "    return x\n" in mutate(SOURCE, "gelu", "last_operation_dropped")


def test_dropping_a_method_returns_its_receiver():
    assert "return y * weight\n" in mutate(SOURCE, "norm", "last_operation_dropped")


def test_dropping_follows_a_returned_name_to_its_assignment():
    assert "    y = x\n    return y" in mutate(SOURCE, "staged", "last_operation_dropped")


def test_an_unknown_function_is_refused():
    with pytest.raises(MutationError, match="missing is not a function"):
        mutate(SOURCE, "missing", "scaled")
