"""The model-level audit of a deployed forward, for deployments the operator-level audit cannot
see into: a replayed CUDA graph (`graph`, `reduce-overhead`) runs no Python, so its kernels'
calls reach no audit (`operators.audit`). Each forward is audited with probability r, drawn
from the operating system's random source: the same inputs run through the references
(`kernel_profile=torch`) eagerly, and each output is held to its expectation from the contracts
(`examples.expectation`). A forward outside it raises `AuditError` naming the output, the
figure and the forward's number.
"""

import random

import torch

from examples.deployment import DeployedForward, Outputs
from examples.expectation import compare_outputs, registry_calls_per_output
from examples.model import ExampleInputs
from operators import use_kernel_profile
from operators.audit import AuditError, checked_rate


class AuditedForward:
    """A deployed forward that audits a random share of its calls against the references."""

    def __init__(self, deployed: DeployedForward, rate: float) -> None:
        self.deployed = deployed
        self.rate = checked_rate(rate)
        self.forwards = 0
        self.audited = 0
        self._calls_per_output = None
        self._draw = random.SystemRandom()

    def __call__(self, inputs: ExampleInputs) -> Outputs:
        outputs = self.deployed(inputs)
        self.forwards += 1
        if self.rate and self._draw.random() < self.rate:
            self._audit(inputs, outputs)
        return outputs

    def _audit(self, inputs: ExampleInputs, outputs: Outputs) -> None:
        model = self.deployed.model
        with torch.inference_mode(), use_kernel_profile("torch"):
            expected = model(inputs)
            if self._calls_per_output is None:
                self._calls_per_output = registry_calls_per_output(model, inputs)
        self.audited += 1
        for comparison in compare_outputs(expected, outputs, self._calls_per_output):
            if not comparison.within:
                raise AuditError(
                    f"audit: forward {self.forwards} under profile "
                    f"{self.deployed.selection.profile!r} ({self.deployed.mode}) moved output "
                    f"{comparison.name!r} by {comparison.max_abs_difference:.3g} against the "
                    f"references, beyond its expectation {comparison.bound:.3g}; its kernels "
                    "passed verify and behave otherwise now, so stop deploying this profile"
                )
