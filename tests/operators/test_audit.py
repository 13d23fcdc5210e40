"""The deployment-side audit: a tuned kernel that behaves while judged and turns afterwards is
caught in the first audited call after it turns; an honest one passes every audit; without an
audit the same kernel goes unseen; a kernel that writes into its input is caught too."""

import json
from pathlib import Path

import pytest
import torch

from operators import ops, use_kernel_profile
from operators.audit import AuditError
from operators.environment import current_kernel_environment
from operators.errors import OperatorError
from operators.profiles import file_digest
from operators.selection import KernelSelection

TURNING_SOURCE = '''"""rms_norm: the reference for its first three calls, then 1% off."""

from operators.catalog.rms_norm import rms_norm_reference

CALLS = [0]


def kernel(x, weight, eps=1e-6):
    CALLS[0] += 1
    out = rms_norm_reference(x, weight, eps)
    return out if CALLS[0] <= 3 else (out.float() * 1.01).to(out.dtype)


def applies(*args, **kwargs):
    return True
'''

HONEST_SOURCE = TURNING_SOURCE.replace("CALLS[0] <= 3", "True")

MUTATING_SOURCE = TURNING_SOURCE.replace(
    "    return out if CALLS[0] <= 3 else (out.float() * 1.01).to(out.dtype)",
    "    x.mul_(2)\n    return out",
)


def tuned_profile(root: Path, source_text: str) -> Path:
    folder = root / "audited"
    (folder / "rms_norm").mkdir(parents=True)
    source = folder / "rms_norm" / "kernel.py"
    source.write_text(source_text)
    profile = {
        "name": "audited",
        "environment": current_kernel_environment().model_dump(),
        "operators": {"rms_norm": {"source": "rms_norm/kernel.py"}},
        "files": {"rms_norm/kernel.py": file_digest(source)},
    }
    (folder / "profile.json").write_text(json.dumps(profile))
    return root


def selection(tmp_path, source_text: str, rate: float) -> KernelSelection:
    root = tuned_profile(tmp_path, source_text)
    return KernelSelection("audited", tuned_root=root, allow_unverified=True, audit_rate=rate)


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 64, generator=generator).to(torch.bfloat16)
    return x, torch.randn(64, generator=generator).to(torch.bfloat16)


def test_a_kernel_that_turns_after_three_calls_fails_the_fourth_audit(tmp_path):
    audited = selection(tmp_path, TURNING_SOURCE, rate=1.0)
    x, weight = inputs()
    with use_kernel_profile(audited):
        for _ in range(3):
            ops.rms_norm(x, weight)
        with pytest.raises(AuditError, match=r"tuned 'rms_norm' of profile 'audited' .* call 4"):
            ops.rms_norm(x, weight)
    assert audited.audit.audited["rms_norm"] == 4


def test_without_an_audit_the_turned_kernel_goes_unseen(tmp_path):
    unaudited = selection(tmp_path, TURNING_SOURCE, rate=0.0)
    x, weight = inputs()
    with use_kernel_profile(unaudited):
        outputs = [ops.rms_norm(x, weight) for _ in range(5)]
    assert not torch.equal(outputs[0], outputs[4])  # it did turn, and nothing said so
    assert unaudited.audit is None


def test_an_honest_kernel_passes_every_audit_and_a_share_of_calls_is_audited(tmp_path):
    audited = selection(tmp_path, HONEST_SOURCE, rate=0.5)
    x, weight = inputs()
    with use_kernel_profile(audited):
        for _ in range(200):
            ops.rms_norm(x, weight)
    assert audited.audit.calls["rms_norm"] == 200
    assert 60 <= audited.audit.audited["rms_norm"] <= 140


def test_a_kernel_that_writes_into_its_input_is_caught(tmp_path):
    audited = selection(tmp_path, MUTATING_SOURCE, rate=1.0)
    x, weight = inputs()
    with use_kernel_profile(audited), pytest.raises(AuditError, match="changed its input 0"):
        ops.rms_norm(x, weight)


@pytest.mark.parametrize(
    ("value", "message"),
    [("often", "is not a number"), ("2", r"outside \[0, 1\]"), ("-0.1", r"outside \[0, 1\]")],
)
def test_a_bad_audit_rate_is_a_one_line_error(monkeypatch, value, message):
    monkeypatch.setenv("CONTROLLER_AUDIT_RATE", value)
    with pytest.raises(OperatorError, match=message) as error:
        KernelSelection("none")
    assert "\n" not in str(error.value)


SWITCHABLE_SOURCE = '''"""rms_norm: the reference until TURNED[0] is set, then twice it."""

from operators.catalog.rms_norm import rms_norm_reference

TURNED = [False]


def kernel(x, weight, eps=1e-6):
    out = rms_norm_reference(x, weight, eps)
    return (out.float() * 2).to(out.dtype) if TURNED[0] else out


def applies(*args, **kwargs):
    return True
'''


def test_a_deployed_forward_whose_kernel_turns_fails_its_next_model_audit(tmp_path):
    from examples.config import TINY
    from examples.deployment import deploy
    from examples.deployment_audit import AuditedForward
    from examples.model import build_model, make_inputs

    switchable = selection(tmp_path, SWITCHABLE_SOURCE, rate=0.0)
    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    with use_kernel_profile(switchable):
        forward = AuditedForward(deploy(model, "eager", inputs), rate=1.0)
        forward(inputs)
        forward(inputs)
        switchable.resolve("rms_norm").tuned.kernel.__globals__["TURNED"][0] = True
        with pytest.raises(AuditError, match=r"forward 3 under profile 'audited' \(eager\)"):
            forward(inputs)
    assert forward.audited == 3


def test_a_model_audit_rate_outside_zero_to_one_is_refused():
    from examples.config import TINY
    from examples.deployment import deploy
    from examples.deployment_audit import AuditedForward
    from examples.model import build_model, make_inputs

    model = build_model(TINY, 0, "cpu")
    inputs = make_inputs(TINY, 1, 0, "cpu")
    with pytest.raises(OperatorError, match=r"outside \[0, 1\]"):
        AuditedForward(deploy(model, "eager", inputs), rate=1.5)
