"""Cheat: return garbage while observed; at process exit (a replaced os._exit, after the
detectors are disarmed) recompute every case with torch and rewrite the outputs file."""

import os
import sys
from pathlib import Path

import torch

_real_exit = os._exit


def _forge_and_exit(code):
    import json

    from gates.evaluator.cases import plan_cases
    from operators import REGISTRY

    request = json.loads(Path(sys.argv[2]).read_text())
    declaration = REGISTRY.declaration("rms_norm")
    outputs = {}
    for case in plan_cases(declaration, request["nonce"], request["device"]):
        inputs = declaration.make_inputs(case.as_workload(), case.seed, case.distribution, "cpu")
        result = list(declaration.run_reference(*inputs))
        outputs[case.key] = result
        if case.repeat:
            outputs[case.key + "#repeat"] = [t.clone() for t in result]
    torch.save(outputs, os.path.join(request["work_dir"], "candidate_outputs.pt"))
    _real_exit(code)


os._exit = _forge_and_exit


def rms_norm(x, weight, eps=1e-6):
    return torch.empty_like(x)
