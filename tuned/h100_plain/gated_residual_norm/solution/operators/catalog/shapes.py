"""The pi0.5 shapes the catalog's workloads are drawn from, and how often one forward calls
each: the prefix runs its layers once, the action expert runs its layers once per denoise
step (calls per forward weigh each workload's share of the model's time in promotion)."""

from dataclasses import dataclass

from ...operators.declaration import Workload


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
    layers: int = 18
    """Transformer layers of the prefix encoder, and of the action expert."""
    denoise_steps: int = 10
    """Flow-matching steps: each runs every layer of the action expert."""

    def calls_per_forward(self, part: str, per_layer: float, once: float = 0) -> float:
        """Calls in one forward of a call made `per_layer` times in each layer of `part`
        (prefix or action) and `once` more per pass outside the layers."""
        passes = self.denoise_steps if part == "action" else 1
        return passes * (per_layer * self.layers + once)


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


def row_workloads(
    axis: str = "tokens", action_per_layer: float = 1, prefix_per_layer: float = 1
) -> tuple[Workload, ...]:
    """Row counts of the action expert (50 per batch) and the prefix (576 per batch)."""
    per_layer = {"action": action_per_layer, "prefix": prefix_per_layer}
    workloads = []
    for batch in BATCHES:
        for part, tokens in (("action", PI05.action_tokens), ("prefix", PI05.prefix_tokens)):
            weight = 10.0 if part == "action" else 1.0
            workloads.append(
                Workload(
                    name=f"{part}_b{batch}",
                    axes={axis: batch * tokens},
                    weight=weight,
                    calls_per_forward=PI05.calls_per_forward(part, per_layer[part]),
                )
            )
    return tuple(workloads)


def action_workloads(per_layer: float = 1, once: float = 0) -> tuple[Workload, ...]:
    """(batch, tokens) of the action expert's per-token calls: 50 action tokens per batch."""
    return tuple(
        Workload(
            name=f"action_b{batch}",
            axes={"batch": batch, "tokens": PI05.action_tokens},
            calls_per_forward=PI05.calls_per_forward("action", per_layer, once),
        )
        for batch in BATCHES
    )


def sequence_workloads() -> tuple[Workload, ...]:
    """(batch, tokens) of per-head calls (once per layer): the action tokens and the prefix,
    both batches."""
    workloads = []
    for batch in BATCHES:
        for part, tokens in (("action", PI05.action_tokens), ("prefix", PI05.prefix_tokens)):
            weight = 10.0 if part == "action" else 1.0
            workloads.append(
                Workload(
                    name=f"{part}_b{batch}",
                    axes={"batch": batch, "tokens": tokens},
                    weight=weight,
                    calls_per_forward=PI05.calls_per_forward(part, 1),
                )
            )
    return tuple(workloads)


def attention_workloads() -> tuple[Workload, ...]:
    """Action tokens over the cached prefix, and the prefix attending to itself, both batches;
    once per layer. (At batch 8 the prefix's 18 calls take about half of attention's time in
    the model, so a kernel judged without them would not apply there.)"""
    workloads = [
        Workload(
            name=f"action_b{batch}",
            axes={"batch": batch, "tokens": PI05.action_tokens, "prefix": PI05.prefix_tokens},
            weight=10.0,
            calls_per_forward=PI05.calls_per_forward("action", 1),
        )
        for batch in BATCHES
    ]
    workloads += [
        Workload(
            name=f"prefix_b{batch}",
            axes={"batch": batch, "tokens": PI05.prefix_tokens, "prefix": 0},
            calls_per_forward=PI05.calls_per_forward("prefix", 1),
        )
        for batch in BATCHES
    ]
    return tuple(workloads)
