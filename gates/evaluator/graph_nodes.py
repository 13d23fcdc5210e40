"""Read a captured CUDA graph's nodes through cuda-bindings, and the CUfunction handles and
launch facts of the kernels Triton compiled from the solution's own sources (CUDA only; the
verdicts are `detectors/cuda_graph.py` and `detectors/dependent_launch.py`, which are pure)."""

import functools
import os

from gates.evaluator.detectors.cuda_graph import GraphNode
from gates.evaluator.detectors.dependent_launch import CompiledKernelFacts

# CUgraphNodeType values (cuda.h) and the node kinds they map to.
NODE_KINDS = {
    0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "child_graph", 5: "empty",
    6: "event_wait", 7: "event_record", 8: "other", 9: "other", 10: "mem_alloc",
    11: "mem_free", 12: "other", 13: "conditional",
}  # fmt: skip
MEMORY_PLACES = {1: "host", 2: "device", 3: "array"}  # CUmemorytype; 4 (unified) is resolved
LAUNCH_FIELDS = (
    "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ", "sharedMemBytes",
)  # fmt: skip


def cuda_driver():
    """cuda-bindings' driver module (imported once, before the solution, by the guard's
    warm-up: nothing it sets at import may look like the solution's doing)."""
    try:
        from cuda.bindings import driver
    except ImportError:  # older cuda-python
        from cuda import cuda as driver
    return driver


def _checked(result):
    error, *values = result
    if int(error) != 0:
        raise RuntimeError(f"CUDA driver call failed with {error}")
    return values[0] if len(values) == 1 else values


def graph_nodes(raw_graph: int) -> list[GraphNode]:
    """Every node of a cudaGraph_t (from `torch.cuda.CUDAGraph.raw_cuda_graph()`)."""
    driver = cuda_driver()
    graph = driver.CUgraph(raw_graph)
    _, count = _checked(driver.cuGraphGetNodes(graph, 0))
    nodes, _ = _checked(driver.cuGraphGetNodes(graph, count))
    described = []
    for node in nodes[:count]:
        kind = NODE_KINDS.get(int(_checked(driver.cuGraphNodeGetType(node))), "other")
        if kind == "kernel":
            params = _checked(driver.cuGraphKernelNodeGetParams(node))
            function = int(params.func)
            launch = tuple(int(getattr(params, field, 0) or 0) for field in LAUNCH_FIELDS)
            described.append(
                GraphNode(kind=kind, function=function, name=_name(function), launch=launch)
            )
        elif kind == "memcpy":
            params = _checked(driver.cuGraphMemcpyNodeGetParams(node))
            source = _place(params.srcMemoryType, params.srcDevice, params.srcHost)
            target = _place(params.dstMemoryType, params.dstDevice, params.dstHost)
            described.append(GraphNode(kind=kind, source=source, target=target))
        else:
            described.append(GraphNode(kind=kind))
    return described


def _place(memory_type, device_pointer, host_pointer) -> str:
    """Device, host or managed memory behind one side of a copy."""
    value = int(memory_type)
    if value in MEMORY_PLACES:
        return MEMORY_PLACES[value]
    driver = cuda_driver()
    pointer = int(device_pointer) or int(host_pointer)
    attribute = driver.CUpointer_attribute
    try:
        if _checked(
            driver.cuPointerGetAttribute(attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer)
        ):
            return "managed"
        kind = _checked(
            driver.cuPointerGetAttribute(attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer)
        )
    except RuntimeError:
        return "host"  # not a CUDA allocation: pageable host memory
    return MEMORY_PLACES.get(int(kind), "unknown")


@functools.lru_cache(maxsize=1024)  # a cold graph repeats one kernel thousands of times
def _name(function: int) -> str:
    try:
        driver = cuda_driver()
        name = _checked(driver.cuFuncGetName(driver.CUfunction(function)))
        return name.decode() if isinstance(name, bytes) else str(name)
    except (RuntimeError, AttributeError):
        return ""


def solution_functions(modules, solution_dir: str) -> frozenset[int]:
    """CUfunction handles of every kernel Triton compiled from a JIT function defined in the
    solution's files (autotuned and heuristic wrappers unwrapped)."""
    from triton.runtime.jit import JITFunction

    folder = os.path.realpath(solution_dir) + os.sep
    handles: set[int] = set()
    for module in modules:
        for value in list(vars(module).values()):
            function = value
            for _ in range(8):  # Autotuner -> Heuristics -> JITFunction
                if isinstance(function, JITFunction) or not hasattr(function, "fn"):
                    break
                function = function.fn
            if not isinstance(function, JITFunction):
                continue
            if not os.path.realpath(function.fn.__code__.co_filename).startswith(folder):
                continue
            for cache in function.device_caches.values():
                for kernel in cache[0].values():
                    kernel._init_handles()
                    handles.add(int(kernel.function))
    return frozenset(handles)


def solution_kernel_facts(solution_dir: str) -> list[CompiledKernelFacts]:
    """Name, launch mode and PTX of every kernel Triton compiled from a JIT function defined in
    the solution's files, wherever the solution keeps the function (a module attribute, a
    closure, a table): every live JIT function is looked at, once, after timing."""
    import gc

    from triton.runtime.jit import JITFunction

    folder = os.path.realpath(solution_dir) + os.sep
    facts = []
    for function in [item for item in gc.get_objects() if isinstance(item, JITFunction)]:
        if not os.path.realpath(function.fn.__code__.co_filename).startswith(folder):
            continue
        for cache in function.device_caches.values():
            facts.extend(
                CompiledKernelFacts(
                    name=str(getattr(kernel, "name", "")),
                    dependent_launch=bool(getattr(kernel.metadata, "launch_pdl", False)),
                    ptx=getattr(kernel, "asm", {}).get("ptx"),
                )
                for kernel in list(cache[0].values())
            )
    return facts


def library_functions(facts) -> frozenset[int]:
    """CUfunction handles of the kernels torch's libraries run for the ops a candidate may
    call (`facts` with operands: the BLAS products where its task allows them, same-dtype
    layout copies), found by capturing the same ops here, in the evaluator's own code, on fresh
    operands of the same dtypes, shapes, strides and alignment: a kernel in the candidate's
    graph with one of these handles is the library's."""
    handles: set[int] = set()
    calls = {(fact.label, fact.operands, fact.keywords) for fact in facts if fact.operands}
    for call in calls:
        handles.update(_product_kernels(*call))
    return frozenset(handles)


@functools.lru_cache(maxsize=256)
def _product_kernels(label: str, operands: tuple, keywords: tuple = ()) -> frozenset[int]:
    """The kernels one op runs on operands laid out as `operands`."""
    import torch

    namespace, name, overload = label.split(".")
    packet = getattr(getattr(torch.ops, namespace), name)
    # An `out=` overload writes where the candidate asked: the same library kernel runs for
    # the overload that allocates, which needs no destination here.
    product = getattr(packet, "default" if overload == "out" else overload)
    tensors = [_fresh_operand(*layout) for layout in operands]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    options = dict(keywords)
    with torch.cuda.stream(side):
        product(*tensors, **options)  # the library's handles and workspace, outside capture
    torch.cuda.current_stream().wait_stream(side)
    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:  # a torch without keep_graph
        graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        product(*tensors, **options)
    return frozenset(
        node.function
        for node in graph_nodes(graph.raw_cuda_graph())
        if node.kind == "kernel" and node.function is not None
    )


def _fresh_operand(dtype, shape, stride, alignment):
    """Zeros laid out as a candidate's operand was, at the same address modulo 256 bytes."""
    import torch

    size = torch.empty((), dtype=dtype).element_size()
    span = 1 + sum(
        (extent - 1) * step for extent, step in zip(shape, stride, strict=True) if extent
    )
    offset = alignment // size
    storage = torch.zeros(offset + span, dtype=dtype, device="cuda")
    return storage.as_strided(shape, stride, offset)
