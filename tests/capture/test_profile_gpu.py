"""`controller profile`'s CUDA paths on a real device (run on the GPU machine: `device_call.sh
gputests`): the graph profile leaves its lead-in replay out and labels every replayed kernel;
the eager profile takes its times from the device-only pass, matched kernel by kernel."""

import pytest
import torch

from controller.profiling.hotspots import build_report
from controller.profiling.profiled_run import profile_driver


def small_step():
    """A step of a few dependent kernels, the same every time."""
    x = torch.randn(256, 256, device="cuda", generator=torch.Generator("cuda").manual_seed(0))

    def step():
        y = x @ x
        return torch.relu(y).sum(dim=0)

    return step


@pytest.mark.gpu
def test_a_graph_profile_leaves_its_lead_in_out_and_labels_every_replayed_kernel():
    run = profile_driver(small_step(), "graph", warmup=2, steps=3, timed_steps=10)
    assert run.lead_in == 1 and run.timing is None
    report = build_report(run, ["test:step"])
    assert report.lead_in == 1
    assert report.graph is not None and report.graph.labelled_share_of_time > 0.9
    assert report.account.account_us_per_step > 0


@pytest.mark.gpu
def test_an_eager_profile_takes_its_times_from_the_device_only_pass():
    run = profile_driver(small_step(), "eager", warmup=2, steps=3, timed_steps=10)
    assert run.timing is not None and run.timing.activities
    report = build_report(run, ["test:step"])
    assert report.lead_in == 1
    assert "second pass's that traced only the device" in report.note
    assert report.account.busy_us_per_step > 0
