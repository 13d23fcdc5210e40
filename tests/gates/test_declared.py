"""Reading a catalog's declarations from source: names, and where a reference is defined."""

from pathlib import Path

from target_fixture import GOOD_EDITS

from gates.registration.declared import declared_operators, reference_location
from gates.target import load_target_config

REPO = Path(__file__).resolve().parents[2]


def test_this_repository_declares_rms_norm():
    config = load_target_config(REPO)
    assert "rms_norm" in declared_operators(REPO, config)
    assert reference_location(REPO, config, "rms_norm") == (
        "operators/catalog/rms_norm.py",
        "rms_norm_reference",
    )


def test_a_new_operator_is_found_in_the_candidate(base_tree, make_candidate):
    config = load_target_config(base_tree)
    assert "gelu_tanh" not in declared_operators(base_tree, config)
    candidate = make_candidate()
    assert "gelu_tanh" in declared_operators(candidate, config)
    assert reference_location(candidate, config, "gelu_tanh") == (
        "operators/catalog/gelu_tanh.py",
        "gelu_tanh_reference",
    )


def test_a_reference_defined_elsewhere_is_left_to_the_probe(base_tree, make_candidate):
    config = load_target_config(base_tree)
    lambda_reference = GOOD_EDITS["operators/catalog/gelu_tanh.py"].replace(
        "reference=gelu_tanh_reference", "reference=F.gelu"
    )
    candidate = make_candidate({"operators/catalog/gelu_tanh.py": lambda_reference})
    assert reference_location(candidate, config, "gelu_tanh") is None
