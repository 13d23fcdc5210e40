"""The compute floor counts the references' operations on the meta device exactly as a real
forward counts them, grows with the batch, and is not claimed where there is no GPU."""

import torch
from torch.utils.flop_counter import FlopCounterMode

from examples.compute_floor import compute_floor, forward_flops
from examples.config import TINY
from examples.model import build_model, make_inputs
from operators import use_kernel_profile


def test_the_meta_count_matches_a_real_forward_of_the_references():
    cpu = torch.device("cpu")
    model, inputs = build_model(TINY, 0, cpu), make_inputs(TINY, 2, 0, cpu)
    with use_kernel_profile("torch"), FlopCounterMode(display=False) as counter:
        model(inputs)
    assert forward_flops(TINY, 2) == counter.get_total_flops() > 0


def test_the_action_expert_mlp_is_counted_once_per_denoise_step():
    rows = TINY.action_tokens * 2  # batch 2
    mlp = 3 * 2 * rows * TINY.width * TINY.mlp_width  # gate, up and down products
    steps = TINY.denoise_steps * TINY.expert_layers
    one, two = forward_flops(TINY, 1), forward_flops(TINY, 2)
    assert two > one
    meta = torch.device("meta")
    model, inputs = build_model(TINY, 0, meta), make_inputs(TINY, 2, 0, meta)
    with use_kernel_profile("torch"), FlopCounterMode(display=False) as counter:
        model(inputs)
    by_module = counter.get_flop_counts()
    assert sum(by_module["ExampleModel.action_expert.layers.0.mlp"].values()) == mlp * steps


def test_no_floor_is_claimed_without_cuda():
    assert compute_floor(TINY, 1, torch.device("cpu")) is None
