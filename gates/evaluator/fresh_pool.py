"""One timing round's input sets, never seen by any call before, with the trusted baseline's
outputs for each and what a timed or replayed output is compared with: bit for bit under a
bit-exact contract; otherwise within `SCREEN` of the baseline's magnitude plus its RMS, plus
the baseline's own largest error against the FP64 oracle (`baseline_allowances`): a screen for
outputs never computed, copied from another set, stale or of a cheaper precision, which the
exact answer always passes. The accuracy rule itself is applied by the judge to the witnesses
of timed calls.

Without the baseline's error the screen refused the exact answer where an output cancels two
large terms that the baseline rounds apart (a query rotated in FP32 and rounded once, as
`torch.compile` fuses it, against eager's four BF16 roundings): the baseline's own error there
is a share of the terms, not of the output. The allowance is the baseline's error, not the
contract's (twice the worse of stock's and the reference's): that one is wide enough to pass
an output rounded through FP8 at every element, and a kernel that did so on a random few of
its timed calls would slip past the witnesses.

A pool's seeds are a pure function of the nonce, the workload and the round (`pool_seeds`),
so the judge process draws any of its sets again (`drawn_sets`) without taking the candidate
process's word for what they held.
"""

import hashlib
import math

import torch

from operators.fp64_oracle import fp64_outputs

# Device memory for one round's pool: inputs, expected outputs and their comparison bounds.
# A workload whose set is larger reuses each set within the round (for such sizes replaying
# an output costs about as much as computing it).
POOL_BYTES = 2 << 30
SCREEN = 2.0**-6
"""A timed output may differ from the baseline's by this share of |baseline| + RMS(baseline),
plus its output's allowance (`baseline_allowances`)."""
ALLOWANCE_MARGIN = 2.0
"""The baseline's largest error is measured on a pool's first set; it varies between sets of
one distribution, so the allowance is this many times it."""


class FreshPool:
    """One round's input sets, never seen by any call before, with the baseline's outputs for
    each and what a timed output is compared with."""

    def __init__(
        self, declaration, workload, baseline, seeds: tuple[int, int], wanted: int, device
    ) -> None:
        self.exact = declaration.contract.mode == "bit_exact"
        self.seeds = seeds
        self.sets = _first_set(declaration, workload, seeds, device)
        self.expected = [_untimed_outputs(baseline, self.sets[0], declaration.params)]
        self.allowances = (
            [0.0] * len(self.expected[0])
            if self.exact
            else baseline_allowances(declaration, self.sets[0], self.expected[0])
        )
        tensors = self.sets[0] + self.expected[0] * 5  # outputs, and their bounds in FP32
        set_bytes = sum(t.numel() * t.element_size() for t in tensors)
        count = min(wanted, max(2, POOL_BYTES // max(1, set_bytes)))
        self.sets += _other_sets(declaration, workload, seeds, count, device)
        for inputs in self.sets[1:]:
            self.expected.append(_untimed_outputs(baseline, inputs, declaration.params))
        columns = zip(*self.expected, strict=True)  # per output: its value in every set
        per_output = [
            self._references(column, allowance)
            for column, allowance in zip(columns, self.allowances, strict=True)
        ]
        self.checks = list(zip(*per_output, strict=True))  # per set: every output's reference
        self._judged: dict[int, tuple[list, bool]] = {}  # output lists judged well formed

    @property
    def set_bytes(self) -> int:
        """Bytes one call reads and writes: one set's inputs and its outputs."""
        return sum(t.numel() * t.element_size() for t in [*self.sets[0], *self.expected[0]])

    def _references(self, outputs, allowance: float) -> list[tuple[torch.Tensor, ...]]:
        """Per set, what one output is compared with: itself (bit-exact contract or not a
        float), or the baseline's value in FP32 (FP64 for FP64) with its bound."""
        want = outputs[0]
        if self.exact or not want.is_floating_point():
            return [(output,) for output in outputs]
        wide = torch.float64 if want.dtype == torch.float64 else torch.float32
        stacked = torch.stack(outputs).to(wide)
        rms = stacked.square().mean(dim=tuple(range(1, stacked.dim())), keepdim=True).sqrt_()
        bounds = stacked.abs().add_(rms).mul_(SCREEN).add_(allowance)
        return list(zip(stacked.unbind(), bounds.unbind(), strict=True))

    def stack_checks(self) -> None:
        """Stack every set's references per output, for `batch_mismatch`."""
        outputs = len(self.checks[0])
        self.stacked = [
            [
                torch.stack([check[output][part] for check in self.checks])
                for part in range(len(self.checks[0][output]))
            ]
            for output in range(outputs)
        ]

    def batch_mismatch(self, produced: list, chosen: list[int]) -> torch.Tensor:
        """A device count of the calls whose outputs are not the expected outputs of their
        sets: one comparison over all calls of a replay (`stack_checks` first)."""
        index = _on_device(chosen, self.stacked[0][0].device)
        wrong = torch.zeros((), dtype=torch.int64, device=index.device)
        if not self._well_formed(produced):
            return wrong + len(produced)
        for output, references in enumerate(self.stacked):
            want = references[0]
            got = torch.stack([p[output] for p in produced])
            if len(references) == 1:
                view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
                bits = view[got.element_size()]
                differs = got.view(bits) != want.index_select(0, index).view(bits)
            else:
                distance = torch.sub(got, want.index_select(0, index)).abs_()
                differs = ~torch.le(distance, references[1].index_select(0, index))  # NaN too
            wrong += differs.reshape(len(produced), -1).any(dim=1).sum()
        return wrong

    def _well_formed(self, produced: list) -> bool:
        """Whether every call gave plain tensors of the expected shapes and dtypes. A graph's
        outputs are the same tensors at every replay, so each list is judged once (it is
        kept with its verdict, so its id cannot pass to another list)."""
        known = self._judged.get(id(produced))
        if known is not None and known[0] is produced:
            return known[1]
        verdict = all(len(p) >= len(self.stacked) for p in produced) and all(
            type(got) is torch.Tensor
            and got.shape == references[0].shape[1:]
            and got.dtype == self.expected[0][output].dtype
            for p in produced
            for output, (got, references) in enumerate(zip(p, self.stacked, strict=False))
        )
        self._judged[id(produced)] = (produced, verdict)
        return verdict

    def mismatch(self, got: torch.Tensor, index: int, output: int) -> torch.Tensor:
        """A device boolean scalar, True if `got` is not the expected output of set `index`."""
        reference = self.checks[index][output]
        want = reference[0]
        if type(got) is not torch.Tensor:  # a subclass could answer the comparison itself
            return torch.ones((), dtype=torch.bool, device=want.device)
        expected = self.expected[index][output]
        if got.shape != want.shape or got.dtype != expected.dtype or got.device != want.device:
            return torch.ones((), dtype=torch.bool, device=want.device)
        if len(reference) == 1:
            return _differs(got, want)
        distance = torch.sub(got, want).abs_()  # promoted to the comparison's width
        return torch.le(distance, reference[1]).all().logical_not_()


def baseline_allowances(declaration, inputs: list, expected: list) -> list[float]:
    """Per output, the baseline's own largest error against the FP64 oracle on `inputs` (the
    pool's first set), times ALLOWANCE_MARGIN: an output nearer the exact answer than the
    baseline differs from the baseline's by up to that much where the baseline errs most.
    Zero for an output that is not a float, or where the error is not finite."""
    exact = fp64_outputs(declaration.reference, [t.clone() for t in inputs], declaration.params)
    allowances = []
    for oracle, baseline in zip(exact, expected, strict=True):
        if not baseline.is_floating_point():
            allowances.append(0.0)
            continue
        own = float(torch.sub(baseline.double(), oracle.to(baseline.device)).abs().max())
        allowances.append(ALLOWANCE_MARGIN * own if math.isfinite(own) else 0.0)
    return allowances


def screen_refusal(wrong_outputs: list[str]) -> str:
    """What a refused timing tells the agent: which workloads' outputs failed the screen, and
    what the screen is."""
    return (
        f"{', '.join(wrong_outputs)} differ from the baseline's outputs for the same fresh "
        f"inputs by more than the screen (2^-6 of |baseline| + its RMS, plus {ALLOWANCE_MARGIN:g} "
        "times the baseline's own largest error against FP64): outputs never computed, stale, "
        "another set's or of a cheaper precision"
    )


def pool_seeds(nonce: str, workload: str, round_index: int) -> tuple[int, int]:
    """The seeds of one round's pool: its first set's, then the rest's (31 bits each)."""
    digest = hashlib.sha256(f"{nonce}/pool/{workload}/{round_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1, int.from_bytes(digest[4:8], "big") >> 1


def drawn_sets(declaration, workload, seeds: tuple[int, int], sets: int, device) -> list:
    """A pool's `sets` input sets, drawn again from its seeds as `FreshPool` drew them (a
    batched draw depends on its count, so the count must be the pool's)."""
    return _first_set(declaration, workload, seeds, device) + _other_sets(
        declaration, workload, seeds, sets, device
    )


def _first_set(declaration, workload, seeds: tuple[int, int], device) -> list:
    """A pool's first set alone: its size decides how many sets the pool holds."""
    return declaration.make_input_sets(workload, 1, seeds[0], "normal", device)


def _other_sets(declaration, workload, seeds: tuple[int, int], sets: int, device) -> list:
    """The other `sets - 1` sets of a pool of `sets`, in one batched draw."""
    return declaration.make_input_sets(workload, sets - 1, seeds[1], "normal", device)


def _untimed_outputs(function, inputs, params) -> list[torch.Tensor]:
    """A trusted role's outputs for one input set, called on copies before any timing."""
    result = function(*[t.clone() for t in inputs], **params)
    return list(result) if isinstance(result, tuple | list) else [result]


def _on_device(values: list[int], device: torch.device) -> torch.Tensor:
    """`values` as a tensor on `device`; to CUDA from pinned memory, asynchronously, so the
    host does not wait for the replays queued ahead of the copy."""
    values = torch.tensor(values)
    if device.type != "cuda":
        return values.to(device)
    return values.pin_memory().to(device, non_blocking=True)


def _differs(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    return (got.contiguous().view(view) != want.view(view)).any()
