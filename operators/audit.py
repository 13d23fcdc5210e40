"""The deployment-side audit of tuned kernels: what a kernel does once `verify` has looked away.

A tuned kernel is judged before it is installed and verified before a model loads it; a kernel
that behaves while judged and turns afterwards (after some number of calls, a date, a warm
cache) would go unseen in deployment. With an audit rate r (`CONTROLLER_AUDIT_RATE`, or
`KernelSelection(audit_rate=r)`), each call of a tuned kernel is audited with probability r,
drawn from the operating system's random source, so no code in the process can tell which
calls will be. An audited call's inputs are copied before the kernel runs and must be
unchanged after it; the reference runs on the copies, and every output is held to the
operator's contract (`operators.accuracy`). A call that fails raises `AuditError` naming the
operator, the call and the figure. Calls made while a CUDA graph is being captured are not
audited (a capture cannot wait on the comparison), and a replayed graph runs no Python: audit
a graph-deployed model through its eager or compiled forward.
"""

import random
from collections import Counter
from typing import Any

import torch

from operators.accuracy import AccuracyCheck
from operators.declaration import OperatorDeclaration, as_outputs
from operators.errors import OperatorError

AUDIT_VARIABLE = "CONTROLLER_AUDIT_RATE"


class AuditError(OperatorError):
    """A tuned kernel broke its operator's contract in an audited call."""


class Audit:
    """Audits a random share of tuned calls and counts them per operator."""

    def __init__(self, rate: float, profile: str) -> None:
        self.rate = checked_rate(rate)
        self.profile = profile
        self.calls: Counter = Counter()
        self.audited: Counter = Counter()
        self._draw = random.SystemRandom()

    def call(self, declaration: OperatorDeclaration, kernel, args: tuple, kwargs: dict) -> Any:
        """Run `kernel`, auditing this call with probability `rate`."""
        name = declaration.name
        self.calls[name] += 1
        if not self.rate or self._draw.random() >= self.rate or _capturing():
            return kernel(*args, **kwargs)
        copies = [_copy(value) for value in args]
        keyword_copies = {key: _copy(value) for key, value in kwargs.items()}
        result = kernel(*args, **kwargs)
        for position, (value, copy) in enumerate(zip(args, copies, strict=True)):
            if isinstance(value, torch.Tensor) and not torch.equal(value, copy):
                self._fail(name, f"it changed its input {position}")
        got = as_outputs(result)
        self.audited[name] += 1
        params = {**declaration.params, **keyword_copies}
        violation = AccuracyCheck.on_inputs(declaration, copies, params).violation(got)
        if violation is not None:
            self._fail(name, violation.describe())
        return result

    def _fail(self, name: str, what: str) -> None:
        raise AuditError(
            f"audit: tuned {name!r} of profile {self.profile!r} broke its contract in call "
            f"{self.calls[name]}: {what}; it passed its judgement and verify and behaves "
            "otherwise now, so stop deploying this profile"
        )


def audit_rate_from_environment(environ) -> float:
    """The rate `CONTROLLER_AUDIT_RATE` asks for (0 when unset); a one-line error otherwise."""
    text = environ.get(AUDIT_VARIABLE, "").strip()
    if not text:
        return 0.0
    try:
        return float(text)
    except ValueError:
        raise OperatorError(
            f"{AUDIT_VARIABLE}={text!r} is not a number; give the share of tuned calls to "
            "audit, from 0 to 1"
        ) from None


def checked_rate(rate: float) -> float:
    """`rate` when it is a share of calls, else a one-line error."""
    if not 0.0 <= rate <= 1.0:
        raise OperatorError(
            f"audit rate {rate!r} is outside [0, 1]; give the share of tuned calls to "
            "audit, e.g. 0.01"
        )
    return rate


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
