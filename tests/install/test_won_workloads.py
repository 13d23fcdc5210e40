"""An installed kernel applies only where it won: the workloads its promotion verdict gave it
(faster than production with the evaluator's confidence, slower than no role beyond noise);
elsewhere the call runs production."""

from controller.profile_install import declined_workloads, verified_layouts, won_workloads
from operators import REGISTRY


def _evaluation(rows: dict, role: str = "baseline") -> dict:
    return {"timing": {"promotion": {"against": {role: {"workloads": rows}}}}}


def test_only_workloads_faster_with_confidence_are_owned():
    rows = {
        "action_b1": {"ratio": 0.5, "low": 0.49, "high": 0.51},  # won
        "action_b8": {"ratio": 0.99, "low": 0.97, "high": 1.01},  # within noise: not owned
        "prefix_b8": {"ratio": 1.2, "low": 1.1, "high": 1.3},  # lost
    }
    owns = won_workloads(_evaluation(rows))
    assert list(owns) == ["action_b1"]
    assert owns["action_b1"].startswith("x2.000") and "against the baseline" in owns["action_b1"]
    declines = declined_workloads(_evaluation(rows))
    assert list(declines) == ["action_b8", "prefix_b8"]
    assert declines["prefix_b8"].startswith("x0.833")


def test_a_later_promotion_owns_what_beats_production_unless_slower_than_the_incumbent():
    """Unowned, a call runs production, not the incumbent: a tie with the incumbent is owned,
    a loss to it beyond noise is not."""
    evaluation = _evaluation({"action_b1": {"ratio": 0.9, "low": 0.88, "high": 0.92}})
    evaluation["timing"]["promotion"]["against"]["incumbent"] = {
        "workloads": {"action_b1": {"ratio": 1.01, "low": 1.0, "high": 1.02}}
    }
    assert list(won_workloads(evaluation)) == ["action_b1"]
    evaluation["timing"]["promotion"]["against"]["incumbent"]["worse"] = ["action_b1"]
    assert won_workloads(evaluation) == {}
    assert won_workloads({"device": "cpu"}) == {}


def test_the_layouts_installed_are_those_of_the_workloads_won():
    everything = verified_layouts("rms_norm", "cuda")
    won = verified_layouts("rms_norm", "cuda", workloads={"action_b1"})
    assert 0 < len(won) < len(everything)
    assert all(signature in everything for signature in won)
    rows = [w.axes["tokens"] for w in REGISTRY.declaration("rms_norm").workloads]
    assert len(everything) >= len(rows)
    assert verified_layouts("rms_norm", "cuda", workloads=set()) == []


def test_the_verdicts_recorded_owners_decide_and_beat_every_role():
    """The promotion verdict records what it judged as installed: install owns exactly that,
    even where the rows alone would read as won."""
    rows = {
        "action_b1": {"ratio": 0.5, "low": 0.49, "high": 0.51},
        "prefix_b1": {"ratio": 0.8, "low": 0.79, "high": 0.81},
    }
    evaluation = _evaluation(rows)
    evaluation["timing"]["promotion"]["owns"] = ["action_b1"]  # prefix_b1 slower on a figure
    assert list(won_workloads(evaluation)) == ["action_b1"]
    assert list(declined_workloads(evaluation)) == ["prefix_b1"]
    without = _evaluation(rows)  # an older verdict: beat every role, slower on no figure
    without["timing"]["promotion"]["against"]["baseline"]["worse"] = ["prefix_b1"]
    assert list(won_workloads(without)) == ["action_b1"]
