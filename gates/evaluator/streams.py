"""Which CUDA stream each Triton launch and CUDA-graph replay of the candidate went to.

Triton asks its driver for the current stream at every launch; wrapping that call and
`CUDAGraph.replay` (before the solution is imported) shows work redirected to a side stream.
"""

import torch


class LaunchStreamRecorder:
    """Records the stream handle of every Triton launch while active (CUDA only)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.handles: list[int] = []
        self.active = False
        if device.type != "cuda":
            return
        from triton.runtime import driver

        active = driver.active
        original = active.get_current_stream

        def recording_get_current_stream(*args, **kwargs):
            handle = original(*args, **kwargs)
            if self.active:
                self.handles.append(int(handle))
            return handle

        active.get_current_stream = recording_get_current_stream
        graph_class = torch.cuda.CUDAGraph
        original_replay = graph_class.replay

        def recording_replay(graph, *args, **kwargs):
            if self.active:
                self.handles.append(int(torch.cuda.current_stream().cuda_stream))
            return original_replay(graph, *args, **kwargs)

        graph_class.replay = recording_replay

    def current(self) -> int | None:
        if self.device.type != "cuda":
            return None
        return int(torch.cuda.current_stream(self.device).cuda_stream)

    def __enter__(self) -> "LaunchStreamRecorder":
        self.handles = []
        self.active = True
        return self

    def __exit__(self, *exc) -> None:
        self.active = False

    def foreign_launches(self, expected: int | None) -> int:
        """How many launches went to a stream other than `expected` (or the stream changed)."""
        if expected is None:
            return 0
        foreign = sum(1 for handle in self.handles if handle != expected)
        if self.current() != expected:
            foreign += 1
        return foreign
