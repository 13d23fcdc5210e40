"""The model-level gate's baseline is, per output, the worse of `torch` and `stock`: a candidate
as accurate as stock passes where `torch` alone would have refused it, and one worse than both
is still refused."""

import torch

from controller.verification.model_gate import collect_references, judge


def _forward(offsets: dict[str, float]):
    def forward(batch: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        base = torch.randn(batch, 64, generator=generator, dtype=torch.float64)
        return {name: (base + offset).float() for name, offset in offsets.items()} | {
            "tokens": torch.arange(batch)
        }

    return forward


def test_the_worse_baseline_sets_the_bound_per_output():
    reference = _forward({"a": 0.0, "b": 0.0})
    torch_profile = _forward({"a": 1e-4, "b": 1e-2})
    stock_profile = _forward({"a": 1e-2, "b": 1e-4})
    cases = collect_references(reference, [torch_profile, stock_profile], [2], [0, 1])
    as_stock = judge(cases, _forward({"a": 1e-2, "b": 1e-2}))
    assert all(verdict.passed for verdict in as_stock), as_stock
    only_torch = collect_references(reference, torch_profile, [2], [0, 1])
    assert not all(verdict.passed for verdict in judge(only_torch, _forward({"a": 1e-2, "b": 0})))
    worse = judge(cases, _forward({"a": 5e-2, "b": 1e-2}))
    assert [verdict.name for verdict in worse if not verdict.passed] == ["a"]
