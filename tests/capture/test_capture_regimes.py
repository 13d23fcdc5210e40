"""What promotion takes from the model: whether a captured call's inputs were just written
(its timing regime) and how often one forward makes each call (its weight), from a capture of
the tiny example or from the catalog's declared calls per forward."""

from examples.config import PI05 as EXAMPLE_PI05
from examples.config import TINY
from gates.evaluator.captured_cases import load_captured, timed_declaration
from gates.evaluator.model_weights import model_weights
from gates.evaluator.timing import promotion_figure
from gates.tasks.captured import render_captured_package
from gates.tasks.generation import write_package
from operators import REGISTRY
from operators.call_capture import load_capture
from operators.catalog.shapes import PI05

L2 = 60 << 20


def per_forward(size) -> dict[str, int]:
    """Calls per forward of the example at `size`, read off its structure (the same counts
    `test_capture` checks against a capture of the tiny model)."""
    layers, denoise = size.expert_layers, size.denoise_steps
    return {
        "rms_norm": 2 * size.prefix_layers,
        "ada_rms_norm": denoise * (layers + 1),
        "gated_residual_norm": denoise * layers,
        "gated_down_projection": denoise * layers,
        "gated_gelu_projection": size.prefix_layers + denoise * layers,
        "qkv_projection": size.prefix_layers + denoise * layers,
        "attention_output": size.prefix_layers + denoise * layers,
        "rotate_qk": size.prefix_layers + denoise * layers,
        "split_kv_attention": size.prefix_layers + denoise * layers,
    }


def test_a_capture_knows_which_calls_found_their_inputs_just_written(tiny_capture):
    """rotate_qk reads the projections just made (warm); gated_residual_norm reads the
    residual stream from before the attention (cold)."""
    layouts = load_capture(tiny_capture).layouts
    by_operator = {}
    for layout in layouts:
        by_operator.setdefault(layout.operator, []).append(layout)
    assert all(layout.inputs_just_written for layout in by_operator["rotate_qk"])
    assert all(layout.inputs_just_written for layout in by_operator["rms_norm"])
    assert all(layout.just_written_calls == 0 for layout in by_operator["gated_residual_norm"])


def test_a_captured_package_times_and_weighs_workloads_as_the_model_runs_them(
    tiny_capture, tmp_path
):
    capture = load_capture(tiny_capture)
    for name, figure in (("rotate_qk", "warm"), ("gated_residual_norm", "cold")):
        declaration = REGISTRY.declaration(name)
        files = render_captured_package(declaration, tiny_capture)
        folder, _ = write_package(declaration, tmp_path, files=files)
        timed = timed_declaration(declaration, load_captured(folder))
        assert set(timed.promotion_figures.values()) == {figure}
        weights = model_weights(folder, declaration)
        assert set(weights) == {workload.name for workload in timed.workloads}
        assert {weight.source for weight in weights.values()} == {"captured"}
        total = sum(weight.calls_per_forward for weight in weights.values())
        assert total == capture.counts_by_operator()[name] / capture.steps
        assert total == per_forward(TINY)[name]


def test_the_figure_follows_the_task_then_the_capture_then_the_l2():
    assert promotion_figure("cold", "warm", 1 << 10, L2) == ("cold", "task")
    assert promotion_figure(None, "warm", 1 << 30, L2) == ("warm", "captured")
    assert promotion_figure(None, "cold", 1 << 10, L2) == ("cold", "captured")
    assert promotion_figure(None, None, 1 << 30, L2) == ("cold", "l2-size")
    assert promotion_figure(None, None, 1 << 10, L2) == ("warm", "l2-size")


def test_declared_calls_per_forward_follow_the_example_model(tmp_path):
    """At batch 1 the declared workloads of each operator add up to the pi0.5-sized
    example's calls per forward; the action expert's run 10 steps x 18 layers."""
    assert (PI05.layers, PI05.denoise_steps) == (
        EXAMPLE_PI05.prefix_layers,
        EXAMPLE_PI05.denoise_steps,
    )
    expected = per_forward(EXAMPLE_PI05)
    for name, count in expected.items():
        declaration = REGISTRY.declaration(name)
        weights = model_weights(tmp_path, declaration)
        assert {weight.source for weight in weights.values()} == {"declared"}
        batch_one = [w for w in declaration.workloads if w.name.endswith("_b1")]
        assert sum(w.calls_per_forward for w in batch_one) == count, name
    rotate = model_weights(tmp_path, REGISTRY.declaration("rotate_qk"))
    assert rotate["action_b8"].calls_per_forward == 180
    assert rotate["prefix_b8"].calls_per_forward == 18
