"""The outputs a candidate's are held to, as its declaration names them.

Most operators' references compute in FP32 and round once, which is exact enough for their
contracts. Where a declaration says `oracle="float64"`, its reference's own FP32 error is a
large share of the tolerance (attention's near-one-hot softmax over a thousand keys), so a
kernel more exact than the reference would fail against it: there the reference runs in FP64
and each output is rounded once to its declared dtype.
"""

import torch

from operators.declaration import DTYPES, OperatorDeclaration
from operators.fp64_oracle import fp64_outputs


def expected_outputs(
    declaration: OperatorDeclaration, inputs, exact: tuple[torch.Tensor, ...] | None = None
) -> list[torch.Tensor]:
    """The reference's outputs on `inputs` under the declaration's oracle; inputs untouched.
    `exact`: the FP64 outputs on these inputs when the caller has them already."""
    with torch.no_grad():
        if declaration.oracle == "float64":
            if exact is None:
                exact = fp64_outputs(declaration.reference, list(inputs), declaration.params)
            return [
                value.to(DTYPES[spec.dtype])
                for value, spec in zip(exact, declaration.outputs, strict=True)
            ]
        return list(declaration.run_reference(*inputs))
