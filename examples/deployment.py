"""The example model as a robot would deploy it: eager, one CUDA graph, or torch.compile.

`graph` captures the whole eager forward into one CUDA graph and replays it; it needs a
forward that never touches the host (see `examples.host_transfers`). `compile` and
`reduce-overhead` compile four regions, the vision tower, the prefix encoder, the denoise
steps' conditioning and the action expert (one denoise step, called ten times), each traced
once into one graph; the second mode adds Inductor's CUDA graphs. A runner belongs to the
kernel selection it was built under and refuses to run under another, so its graphs never run
a profile's kernels stale.
"""

import copy
from collections.abc import Callable
from typing import Literal

import torch

from examples.model import ExampleInputs, ExampleModel
from operators import KernelSelection, OperatorError, active_selection

Mode = Literal["eager", "graph", "compile", "reduce-overhead"]
MODES: tuple[Mode, ...] = ("eager", "graph", "compile", "reduce-overhead")
NEEDS_CUDA: frozenset[str] = frozenset({"graph", "reduce-overhead"})
GRAPH_WARMUP_CALLS = 2

Outputs = dict[str, torch.Tensor]


def compiled_regions(model: ExampleModel) -> dict[str, torch.nn.Module]:
    """The modules `compile` traces, by name: each runs as one graph."""
    return {
        "vision": model.vision,
        "prefix_encoder": model.prefix_encoder,
        "step_conditioning": model.step_conditioning,
        "action_expert": model.action_expert,
    }


class DeployedForward:
    """One way of running a model's forward, bound to the selection active when it was made."""

    def __init__(self, model: ExampleModel, mode: Mode, run: Callable[[ExampleInputs], Outputs]):
        self.model = model
        self.mode = mode
        self.selection: KernelSelection = active_selection()
        self._run = run

    def __call__(self, inputs: ExampleInputs) -> Outputs:
        active = active_selection()
        if active is not self.selection:
            raise OperatorError(
                f"the {self.mode} forward was prepared under kernel selection "
                f"{self.selection.number} (kernel_profile {self.selection.profile!r}) and "
                f"selection {active.number} ({active.profile!r}) is active; prepare it again "
                "under the active one"
            )
        return self._run(inputs)


def deploy(
    model: ExampleModel, mode: Mode, inputs: ExampleInputs, backend: str = "inductor"
) -> DeployedForward:
    """`model`'s forward in `mode` under the active profile, warmed up (compiled, captured)."""
    if mode in NEEDS_CUDA and inputs.noise.device.type != "cuda":
        raise OperatorError(f"mode {mode!r} needs the model on a CUDA device")
    if mode == "eager":
        return DeployedForward(model, mode, model)
    if mode == "graph":
        return DeployedForward(model, mode, _captured(model, inputs))
    compiled = _compiled_copy(
        model, "reduce-overhead" if mode == "reduce-overhead" else None, backend
    )
    deployed = DeployedForward(model, mode, _stepped(compiled, mode))
    deployed(inputs)  # compiles every region (and records Inductor's graphs) now
    deployed(inputs)
    return deployed


def _captured(model: ExampleModel, inputs: ExampleInputs) -> Callable[[ExampleInputs], Outputs]:
    """The eager forward captured into one CUDA graph over static input buffers."""
    static = ExampleInputs(*(tensor.clone() for tensor in inputs))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(GRAPH_WARMUP_CALLS):  # compiles the kernels, binds their launchers
            model(static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = model(static)

    def replay(new_inputs: ExampleInputs) -> Outputs:
        for buffer, tensor in zip(static, new_inputs, strict=True):
            if buffer is not tensor:
                buffer.copy_(tensor)
        graph.replay()
        return outputs

    replay.graph = graph
    return replay


def _compiled_copy(model: ExampleModel, mode: str | None, backend: str) -> ExampleModel:
    """A shallow copy of `model` whose regions are compiled; parameters and buffers stay
    shared and `model` itself stays eager."""
    copied = copy.copy(model)
    copied._modules = dict(model._modules)
    for name, region in compiled_regions(model).items():
        compiled = torch.compile(region, fullgraph=True, dynamic=False, mode=mode, backend=backend)
        setattr(copied, name, compiled)
    return copied


def _stepped(model: ExampleModel, mode: Mode) -> Callable[[ExampleInputs], Outputs]:
    if mode != "reduce-overhead":
        return model

    def forward(inputs: ExampleInputs) -> Outputs:
        torch.compiler.cudagraph_mark_step_begin()  # a new forward may reuse the graphs' memory
        return model(inputs)

    return forward
