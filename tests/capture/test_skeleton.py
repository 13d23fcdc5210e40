"""`controller skeleton`: a checkpoint's headers alone make a random-weight copy with the same
tensors, without reading tensor data, and the example captured from it has the same layouts
and call counts as from its real weights; bad files are one-line errors."""

import json
import struct
from pathlib import Path

import pytest
import torch

from controller.cli import main
from examples.checkpoint import save_checkpoint
from examples.config import TINY
from examples.model import build_model
from operators.call_capture import load_capture
from operators.safetensors_file import load_tensors, read_header


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """The tiny example's seed-0 weights, as the example saves them."""
    path = tmp_path_factory.mktemp("checkpoint") / "model.safetensors"
    save_checkpoint(build_model(TINY, 0, "cpu"), path)
    return path


def headers_only(source: Path, target: Path) -> Path:
    """`source` with its data region cut to 3 bytes: only the header can be read from it."""
    raw = source.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    target.write_bytes(raw[: 8 + length + 3])
    return target


def test_the_skeleton_has_the_same_tensors_with_other_values(tiny_checkpoint, tmp_path):
    assert main(["skeleton", str(tiny_checkpoint), "--output", str(tmp_path / "skel")]) == 0
    original, skeleton = (
        load_tensors(tiny_checkpoint),
        load_tensors(tmp_path / "skel" / "model.safetensors"),
    )
    assert set(original) == set(skeleton) and len(original) > 10
    for name, tensor in original.items():
        assert (skeleton[name].dtype, skeleton[name].shape) == (tensor.dtype, tensor.shape)
        assert torch.isfinite(skeleton[name].float()).all()
    assert not torch.equal(
        original["action_expert.action_in_weight"], skeleton["action_expert.action_in_weight"]
    )
    record = json.loads((tmp_path / "skel" / "skeleton.json").read_text())
    assert record["seed"] == 0 and record["files"][0]["tensors"] == len(original)


def test_no_tensor_data_is_read(tiny_checkpoint, tmp_path):
    truncated = headers_only(tiny_checkpoint, tmp_path / "model.safetensors")
    with pytest.raises(RuntimeError):
        load_tensors(truncated)  # the data is really gone
    assert main(["skeleton", str(truncated), "--output", str(tmp_path / "a")]) == 0
    assert main(["skeleton", str(tiny_checkpoint), "--output", str(tmp_path / "b")]) == 0
    from_headers = load_tensors(tmp_path / "a" / "model.safetensors")
    from_full = load_tensors(tmp_path / "b" / "model.safetensors")
    assert all(torch.equal(from_headers[name], from_full[name]) for name in from_full)


def layouts_and_counts(folder: Path) -> list[tuple]:
    """Each layout's key and its calls per forward pass."""
    capture = load_capture(folder)
    return sorted((layout.key, layout.count // capture.steps) for layout in capture.layouts)


def test_a_capture_from_the_skeleton_matches_the_real_weights(
    tiny_capture, tiny_checkpoint, tmp_path
):
    # tiny_capture is the example built from seed 0, the weights tiny_checkpoint holds.
    from tests.capture.conftest import DRIVER

    assert main(["skeleton", str(tiny_checkpoint), "--output", str(tmp_path / "skel")]) == 0
    skeleton = tmp_path / "skel" / "model.safetensors"
    argv = ["capture-ops", "--output", str(tmp_path / "capture"), "--steps", "1", "--"]
    assert main([*argv, *DRIVER, "0", str(skeleton)]) == 0
    assert layouts_and_counts(tmp_path / "capture") == layouts_and_counts(tiny_capture)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a checkpoint at all", "not a safetensors file"),
        (struct.pack("<Q", 400) + b'{"w": {"dtype": "BF16"', "truncated safetensors header"),
        (
            struct.pack("<Q", 56) + b'{"w":{"dtype":"Q9","shape":[2],"data_offsets":[0,4]}}   ',
            "cannot make",
        ),
    ],
)
def test_bad_files_are_one_line_errors(content, message, tmp_path, capsys):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(content)
    assert main(["skeleton", str(bad), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_read_header_returns_names_dtypes_and_shapes(tiny_checkpoint):
    tensors, metadata = read_header(tiny_checkpoint)
    by_name = {tensor.name: tensor for tensor in tensors}
    weight = by_name["action_expert.action_in_weight"]
    assert weight.dtype == torch.bfloat16 and weight.shape == (TINY.width, TINY.action_dim)
    assert metadata == {"format": "pt"}
