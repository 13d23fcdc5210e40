"""Cheat: read the evaluator's request file (nonce, seeds) from its command line (a worker
forked from the zygote has its argv in `sys.argv`; /proc shows the zygote's)."""

import sys

from .rms_kernel import honest

with open("/proc/self/cmdline", "rb") as _handle:
    _arguments = _handle.read().split(b"\0") + [a.encode() for a in sys.argv]
_stolen = None
for _argument in _arguments:
    if _argument.endswith(b"request.json"):
        try:
            with open(_argument) as _request:
                _stolen = _request.read()
        except OSError:
            _stolen = None


def rms_norm(x, weight, eps=1e-6):
    return honest(x, weight, eps)
