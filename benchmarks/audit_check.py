"""Whether the deployment audits pass an honest installed profile on the model's own
activations: one eager forward per batch with every tuned call audited (`audit_rate=1`), then
three graph-deployed forwards each audited whole (`AuditedForward`, rate 1). An audit that
fails an honest profile would stop a deployment for nothing.

Run from the repository root on a CUDA machine:
    python benchmarks/audit_check.py --profile h200 --batches 1 8
Writes $OUT/audit_check_<profile>.json after every step when $OUT is set.

Its answer: docs/benchmarks.md, "The tune flow".
"""

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="h200")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    arguments = parser.parse_args()

    import torch

    from examples.config import SIZES
    from examples.deployment import deploy
    from examples.deployment_audit import AuditedForward
    from examples.model import build_model, make_inputs
    from operators import KernelSelection, use_kernel_profile
    from operators.audit import AuditError

    out = os.environ.get("OUT")
    result: dict = {"profile": arguments.profile, "batches": {}}
    model = build_model(SIZES["pi05"], 0, torch.device("cuda"))
    for batch in arguments.batches:
        inputs = make_inputs(SIZES["pi05"], batch, 0, torch.device("cuda"))
        row: dict = {}
        audited = KernelSelection(arguments.profile, audit_rate=1.0)
        with use_kernel_profile(audited), torch.inference_mode():
            try:
                model(inputs)
                row["operator_audit"] = "passed"
            except AuditError as error:
                row["operator_audit"] = str(error)
        row["operator_calls"] = dict(audited.audit.calls)
        row["operator_audited"] = dict(audited.audit.audited)
        with use_kernel_profile(KernelSelection(arguments.profile)):
            forward = AuditedForward(deploy(model, "graph", inputs), rate=1.0)
            try:
                for _ in range(3):
                    forward(inputs)
                row["model_audit"] = f"passed {forward.audited} of {forward.forwards} forwards"
            except AuditError as error:
                row["model_audit"] = str(error)
        result["batches"][str(batch)] = row
        print(f"batch {batch}: {json.dumps(row)}", flush=True)
        if out:
            name = f"audit_check_{arguments.profile}.json"
            Path(out, name).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
