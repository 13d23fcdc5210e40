"""The outputs a candidate's are held to, as its declaration names them.

Most operators' references compute in FP32 and round once, which is exact enough for their
contracts. Where a declaration says `oracle="float64"`, its reference's own FP32 error is a
large share of the tolerance (attention's near-one-hot softmax over a thousand keys), so a
kernel more exact than the reference would fail against it: there the reference runs in FP64
and each output is rounded once to its declared dtype.
"""

import torch

from gates.calibration.fp64_oracle import fp64_outputs
from operators.declaration import DTYPES, OperatorDeclaration


def expected_outputs(declaration: OperatorDeclaration, inputs) -> list[torch.Tensor]:
    """The reference's outputs on `inputs` under the declaration's oracle; inputs untouched."""
    with torch.no_grad():
        if declaration.oracle == "float64":
            exact = fp64_outputs(declaration.reference, list(inputs), declaration.params)
            return [
                value.to(DTYPES[spec.dtype])
                for value, spec in zip(exact, declaration.outputs, strict=True)
            ]
        return list(declaration.run_reference(*inputs))
