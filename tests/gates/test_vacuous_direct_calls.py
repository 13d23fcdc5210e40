"""bit_exact_parity's direct calls: where BASE's outputs hold no finite value, which NaN bytes
come out is not a value (it varied between two runs of BASE), so those bytes are not compared
and the call is not counted; a candidate that turns them into numbers or other shapes is still
refused, and every call with a finite output is compared byte for byte."""

import torch

from gates.registration.bit_parity import _direct_calls
from gates.registration.probes import ProbeResult

SITE = "examples/layer.py:Layer.forward"


def probe(*entries: dict) -> ProbeResult:
    return ProbeResult(folder="unused", direct_calls={SITE: list(entries)})


def call(digest: str, finite: bool, shape=(2, 3)) -> dict:
    output = {"dtype": "torch.bfloat16", "shape": list(shape), "sha256": digest}
    return {"size": 7, "arguments": "same", "outputs": [output], "finite": [finite]}


def test_nan_payloads_are_not_compared_and_the_call_is_not_counted():
    compared, vacuous, problem = _direct_calls(
        probe(call("nan-a", False), call("x", True)),
        probe(call("nan-b", False), call("x", True)),
        set(),
    )
    assert (compared, vacuous, problem) == (1, 1, None)


def test_a_candidate_that_gives_numbers_where_base_gave_none_is_refused():
    *_, problem = _direct_calls(probe(call("nan", False)), probe(call("numbers", True)), set())
    assert problem and "no finite value" in problem


def test_a_candidate_that_changes_the_shape_of_a_non_finite_output_is_refused():
    *_, problem = _direct_calls(
        probe(call("nan", False)), probe(call("nan", False, shape=(3, 2))), set()
    )
    assert problem and "no finite value" in problem


def test_a_finite_output_is_still_compared_byte_for_byte(tmp_path):
    for name, value in (("base", 1.0), ("candidate", 2.0)):
        (tmp_path / name).mkdir()
        torch.save([torch.full((2, 3), value)], tmp_path / name / "direct.pt")
    before, after = call("x", True), call("y", True)
    before["tensors"] = after["tensors"] = "direct.pt"
    base = ProbeResult(folder=str(tmp_path / "base"), direct_calls={SITE: [before]})
    candidate = ProbeResult(folder=str(tmp_path / "candidate"), direct_calls={SITE: [after]})
    *_, problem = _direct_calls(base, candidate, set())
    assert problem and problem.startswith(f"{SITE} called directly on drawn inputs (call 1)")
