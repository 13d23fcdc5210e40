"""Each planned operator's floor per step: its bytes at the measured bandwidth against its
reference's FLOPs at the tensor-core peak, whichever is larger, from the captured layouts."""

import pytest
import torch

from controller.optimize.floors import DeviceRates, operator_floors, tensor_peak
from operators.call_capture import Capture, CapturedLayout
from operators.layouts import layout_of

RATES = DeviceRates(name="test", bandwidth_bytes_per_us=3.0e6, tensor_flops_per_us=989.4e6)


def _layout(operator: str, inputs: dict, outputs: list, count: int, **scalars) -> CapturedLayout:
    return CapturedLayout(
        operator=operator,
        key=operator,
        inputs={name: layout_of(tensor) for name, tensor in inputs.items()},
        scalars=scalars,
        aliases=[],
        outputs=[layout_of(tensor) for tensor in outputs],
        count=count,
        fixture="none",
    )


def _capture(*layouts: CapturedLayout, steps: int = 2) -> Capture:
    return Capture(
        driver="d",
        arguments=[],
        steps=steps,
        device="cuda",
        torch_version="t",
        layouts=list(layouts),
    )


def test_a_product_is_bound_by_tensor_cores_and_a_norm_by_bytes():
    bf16 = torch.bfloat16
    x, weight = torch.empty(400, 1024, dtype=bf16), torch.empty(4096, 1024, dtype=bf16)
    projection = _layout(
        "gated_gelu_projection",
        {"x": x, "gate_weight": weight, "up_weight": weight},
        [torch.empty(400, 4096, dtype=bf16)],
        count=4,  # two calls per step
    )
    rows = torch.empty(400, 1024, dtype=bf16)
    norm = _layout("rms_norm", {"x": rows, "weight": torch.empty(1024, dtype=bf16)}, [rows], 2)
    floors = operator_floors(_capture(projection, norm), RATES)

    flops = 2 * (2 * 400 * 4096 * 1024)  # gate and up products, per call
    moved = 2 * (400 * 1024 + 2 * 4096 * 1024 + 400 * 4096)  # bytes, per call
    product = floors["gated_gelu_projection"]
    assert product.flops_per_step == pytest.approx(2 * flops, rel=0.01)
    assert product.bytes_per_step == 2 * moved
    assert product.bound == "bytes" or product.floor_us == pytest.approx(2 * flops / 989.4e6)
    assert product.floor_us == pytest.approx(max(2 * moved / 3.0e6, 2 * flops / 989.4e6), rel=0.01)

    rms = floors["rms_norm"]
    assert rms.bound == "bytes" and rms.flops_per_step == 0
    assert rms.floor_us == pytest.approx((2 * 400 * 1024 * 2 + 1024 * 2) / 3.0e6)


def test_a_broadcast_input_counts_its_stored_elements_once():
    bf16 = torch.bfloat16
    broadcast = torch.empty(1, 1024, dtype=bf16).expand(400, 1024)
    rows = torch.empty(400, 1024, dtype=bf16)
    layout = _layout("rms_norm", {"x": rows, "weight": broadcast[0]}, [rows], 2)
    assert operator_floors(_capture(layout), RATES)["rms_norm"].bytes_per_step == (
        2 * 400 * 1024 * 2 + 1024 * 2
    )


def test_the_tensor_core_peak_is_read_from_the_device_name():
    assert tensor_peak("NVIDIA H100 80GB HBM3") == pytest.approx(989.4e6)
    assert tensor_peak("NVIDIA H200") == pytest.approx(989.4e6)
    assert tensor_peak("NVIDIA H100 PCIe") == pytest.approx(756.0e6)
    assert tensor_peak("NVIDIA A100-SXM4-80GB") is None
