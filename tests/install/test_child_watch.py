"""The fenced verify child's watch: quiet through what the child itself runs (Inductor
compiling the stock baseline), loud when the profile's code replaces what it watches."""

import shutil

import pytest
import torch

import examples.paired_timing
from controller.verification.child_watch import ChildWatch


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiling_a_baseline_in_the_child_changes_nothing_watched(backend):
    if backend == "inductor" and not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("Inductor on a CPU needs a C++ compiler; none is installed here")
    watch = ChildWatch(main_module=__name__)
    compiled = torch.compile(lambda x: x * 2 + 1, dynamic=False, backend=backend)
    assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 3.0))
    assert watch.findings(threads=False) == []


def test_a_replaced_timing_function_is_named(monkeypatch):
    watch = ChildWatch(main_module=__name__)
    monkeypatch.setattr(examples.paired_timing, "call_times", lambda *args: [1e-6])
    (finding,) = watch.findings()
    assert "replaced examples.paired_timing.call_times" in finding
