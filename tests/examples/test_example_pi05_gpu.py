"""On a GPU, the real pi0.5 shapes run under `none` within the contract expectation."""

import pytest

from examples.config import PI05
from examples.expectation import compare_profiles


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 8])
def test_pi05_none_agrees_with_torch_within_the_contract_expectation(batch):
    comparisons = compare_profiles(PI05, batch, seed=0, device="cuda")
    for comparison in comparisons:
        assert comparison.within, comparison
