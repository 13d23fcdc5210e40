"""Runs of the tiny example model shared by the example tests, each computed once a session.

Under the Triton interpreter a `none` run takes seconds, so tests reuse these.
"""

import pytest

from examples.config import TINY
from examples.expectation import registry_calls_per_output
from examples.model import build_model, make_inputs
from examples.parity import PARITY_SEED, tiny_batch1
from operators import use_kernel_profile


@pytest.fixture(scope="session")
def tiny_none_outputs():
    """tiny_batch1 under the production kernels."""
    with use_kernel_profile("none"):
        return tiny_batch1()


@pytest.fixture(scope="session")
def tiny_torch_outputs():
    """tiny_batch1 under the Torch references."""
    with use_kernel_profile("torch"):
        return tiny_batch1()


@pytest.fixture(scope="session")
def tiny_calls_per_output():
    """The registry calls that feed each output of the tiny model."""
    model = build_model(TINY, PARITY_SEED, "cpu")
    with use_kernel_profile("torch"):
        return registry_calls_per_output(model, make_inputs(TINY, 1, PARITY_SEED, "cpu"))
