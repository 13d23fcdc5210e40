"""The pi0.5 shapes the catalog's workloads are drawn from."""

from dataclasses import dataclass

from operators.declaration import Workload


@dataclass(frozen=True)
class ModelShape:
    """Widths of one pi0.5-shaped model; `PI05` is the real one, `TINY` runs fast on a CPU."""

    width: int
    mlp_width: int
    query_heads: int
    kv_heads: int
    head_dim: int
    action_tokens: int
    prefix_tokens: int


PI05 = ModelShape(
    width=1024,
    mlp_width=4096,
    query_heads=8,
    kv_heads=1,
    head_dim=256,
    action_tokens=50,
    prefix_tokens=576,
)
BATCHES = (1, 8)


def row_workloads(axis: str = "tokens") -> tuple[Workload, ...]:
    """Row counts of the action expert (50 per batch) and the prefix (576 per batch)."""
    workloads = []
    for batch in BATCHES:
        for part, tokens in (("action", PI05.action_tokens), ("prefix", PI05.prefix_tokens)):
            weight = 10.0 if part == "action" else 1.0
            workloads.append(
                Workload(name=f"{part}_b{batch}", axes={axis: batch * tokens}, weight=weight)
            )
    return tuple(workloads)


def action_workloads() -> tuple[Workload, ...]:
    """(batch, tokens) of the action expert's per-token calls: 50 action tokens per batch."""
    return tuple(
        Workload(name=f"action_b{batch}", axes={"batch": batch, "tokens": PI05.action_tokens})
        for batch in BATCHES
    )


def sequence_workloads() -> tuple[Workload, ...]:
    """(batch, tokens) of per-head calls: the action tokens and the prefix, both batches."""
    workloads = []
    for batch in BATCHES:
        for part, tokens in (("action", PI05.action_tokens), ("prefix", PI05.prefix_tokens)):
            weight = 10.0 if part == "action" else 1.0
            workloads.append(
                Workload(
                    name=f"{part}_b{batch}", axes={"batch": batch, "tokens": tokens}, weight=weight
                )
            )
    return tuple(workloads)


def attention_workloads() -> tuple[Workload, ...]:
    """Action tokens over the cached prefix (both batches), plus the prefix attending to itself."""
    workloads = [
        Workload(
            name=f"action_b{batch}",
            axes={"batch": batch, "tokens": PI05.action_tokens, "prefix": PI05.prefix_tokens},
            weight=10.0,
        )
        for batch in BATCHES
    ]
    workloads.append(
        Workload(name="prefix_b1", axes={"batch": 1, "tokens": PI05.prefix_tokens, "prefix": 0})
    )
    return tuple(workloads)
