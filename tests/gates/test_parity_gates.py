"""Gates 6-8 on the fixture target: ATen dataflow, registry hits and bit-exact parity."""

from target_fixture import REQUEST, SITES, VISION, vision

from gates.registration import aten_sequence, bit_parity, registry_hits
from gates.target import load_target_config


def test_a_good_routing_passes_all_three(base_tree, base_probe, make_candidate, probe):
    config = load_target_config(base_tree)
    candidate = probe(make_candidate())
    for verdict in (
        aten_sequence.check(base_probe, candidate, config),
        registry_hits.check(candidate, config, REQUEST.operator, list(SITES)),
        bit_parity.check(base_probe, candidate, config),
    ):
        assert verdict.passed, verdict.summary


def test_a_routing_that_adds_a_cast_changes_the_aten_sequence(
    base_tree, base_probe, make_candidate, probe
):
    cast = vision().replace("ops.gelu_tanh(x) * 0.5", "ops.gelu_tanh(x.double()).float() * 0.5")
    candidate = probe(make_candidate({"model/vision.py": cast}))
    verdict = aten_sequence.check(base_probe, candidate, load_target_config(base_tree))
    assert not verdict.passed
    assert verdict.summary.startswith("model.parity:tiny_batch1: the ATen dataflow differs")
    assert "the candidate ran aten._to_copy.default(float32[1,8]@(8,1))" in verdict.summary
    assert "BASE ran aten.gelu.default(float32[1,8]@(8,1))" in verdict.summary


def test_a_reordered_sum_changes_the_dataflow_and_the_bits(
    base_tree, base_probe, make_candidate, probe
):
    reordered = vision().replace("h = x + skip + bias", "h = x + (skip + bias)")
    assert reordered != vision()
    candidate = probe(make_candidate({"model/vision.py": reordered}))
    config = load_target_config(base_tree)
    dataflow = aten_sequence.check(base_probe, candidate, config)
    assert not dataflow.passed and "is not in BASE's dataflow" in dataflow.summary
    verdict = bit_parity.check(base_probe, candidate, config)
    assert not verdict.passed
    # Which configuration first shows the reordering depends on the CPU's vector path (a batch
    # of one may round alike both ways); some configuration must show it.
    configuration, _, difference = verdict.summary.partition(": ")
    assert configuration in config.parity_configurations
    assert difference.startswith("output 'hidden' differs from BASE in ")


def test_a_site_left_unrouted_has_no_registry_hits(base_tree, make_candidate, probe):
    candidate = probe(make_candidate({"model/vision.py": vision(block=False)}))
    verdict = registry_hits.check(
        candidate, load_target_config(base_tree), REQUEST.operator, list(SITES)
    )
    assert not verdict.passed
    assert verdict.summary.startswith(
        "ops.gelu_tanh was never reached from model/vision.py:VisionBlock.forward in "
        "model.parity:tiny_batch1"
    )
    assert verdict.details["hits"]["model.parity:tiny_batch1"][str(SITES[1])] == 1


def test_a_driver_that_raises_is_reported(base_tree, base_probe, make_candidate, probe):
    broken = VISION.replace("h = x + skip + bias", "h = x + skip + bias[:, :3]")
    candidate = probe(make_candidate({"model/vision.py": broken}, good=False))
    verdict = bit_parity.check(base_probe, candidate, load_target_config(base_tree))
    assert not verdict.passed
    assert verdict.summary.startswith("model.parity:tiny_batch1 raised RuntimeError")


def _probe(folder, arguments: str, outputs: list[str], drivers: list[str]):
    from gates.registration.probes import ProbeResult

    same = {"y": {"digest": "same", "dtype": "float32", "shape": [1]}}
    site = [{"size": 3, "arguments": arguments, "outputs": outputs, "hits": []}]
    return ProbeResult(
        folder=str(folder),
        configurations={driver: {"outputs": same, "hits": []} for driver in drivers},
        direct_calls={"model/vision.py:VisionBlock.forward": site},
    )


def test_a_site_that_takes_other_arguments_is_judged_through_the_hidden_configurations(
    base_tree, tmp_path
):
    from gates.registration.hidden import HiddenConfiguration, HiddenDraw

    config = load_target_config(base_tree)
    hidden = HiddenDraw(
        configurations=(
            HiddenConfiguration(label="hidden configuration 1", driver="d", batch=3, seed=1),
        )
    )
    drivers = [*config.parity_configurations, "hidden configuration 1"]
    base = _probe(tmp_path, "2 arguments: [float32[1,8]@(8,1)]", ["a"], drivers)
    hoisted = _probe(tmp_path, "11 arguments: [float32[1,8]@(8,1), ...]", ["b", "c"], drivers)
    verdict = bit_parity.check(base, hoisted, config, hidden)
    assert verdict.passed, verdict.summary
    assert "VisionBlock.forward takes other arguments than at BASE" in verdict.summary
    # Without a hidden configuration nothing unseen would judge the changed site.
    declared = list(config.parity_configurations)
    base, hoisted = (
        _probe(tmp_path, "2 arguments: [float32[1,8]@(8,1)]", ["a"], declared),
        _probe(tmp_path, "11 arguments: [float32[1,8]@(8,1), ...]", ["b", "c"], declared),
    )
    refused = bit_parity.check(base, hoisted, config, HiddenDraw())
    assert not refused.passed
    assert "no hidden-parity configuration ran" in refused.summary


def test_a_site_that_takes_the_same_arguments_is_still_compared_call_by_call(base_tree, tmp_path):
    config = load_target_config(base_tree)
    drivers = list(config.parity_configurations)
    base = _probe(tmp_path, "2 arguments: [float32[1,8]@(8,1)]", ["a"], drivers)
    candidate = _probe(tmp_path, "2 arguments: [float32[1,8]@(8,1)]", ["b", "c"], drivers)
    verdict = bit_parity.check(base, candidate, config)
    assert not verdict.passed
    assert "called directly on drawn inputs (call 1): returns 2 tensors, BASE 1" in verdict.summary
