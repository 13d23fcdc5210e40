"""The ATen recorder's own tree builder agrees with torch's profiler parser, and leaves to
torch the traces it does not place itself."""

import torch
from torch.profiler import ProfilerActivity, profile

from gates.evaluator.detectors.profiler_trees import call_trees, top_level_trees


def _work(x):
    (x @ x).sum()
    x.to(torch.float64)  # to -> _to_copy -> empty_strided, copy_: a tree with depth
    torch.nn.functional.softmax(x, -1)
    x[1:3].contiguous()


def test_trees_match_torchs_parser():
    x = torch.randn(8, 8)
    with profile(activities=[ProfilerActivity.CPU]) as recorded:
        _work(x)
    ours = call_trees(recorded.profiler.kineto_results)
    theirs = top_level_trees(recorded.events())  # torch's parser placed these
    assert ours is not None and ours == theirs
    assert ("to", {"to", "_to_copy", "empty_strided", "copy_"}) in ours


def test_a_trace_with_memory_records_is_left_to_torch():
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as recorded:
        _work(torch.randn(8, 8))
    assert call_trees(recorded.profiler.kineto_results) is None
