"""Replay witnesses: the outputs of a few of the candidate's timed calls (calls of replayed
graphs, or eager calls where the call cannot be captured), carried to the judge, which draws
their input sets again from the nonce and holds them to the reference.

The comparison made at every timed call (`FreshPool.batch_mismatch`, `FreshPool.mismatch`)
runs in the candidate's device context, where the baseline's outputs and their bounds sit in
memory that a kernel of the solution could write, given an address its Python found. A
witness is out of that reach: whether a timed call is witnessed (and which call of a replay)
is drawn with `secrets` after it was queued; its outputs are copied at once to pageable host
memory, which the device does not address (HMM aside: see docs/evaluator.md, Limits); and
the judge checks them against inputs and references it makes in its own process. A kernel
that computes wrong outputs only while timed, and hides them from the comparison there, is
caught when any of its witnessed calls is wrong. On the graph path no Python of the solution
runs after the captures; on the eager path it runs in every call, but after a witnessed call
the copy is already made.
"""

from secrets import randbelow  # bound before the solution is imported

import torch

from gates.evaluator.protocol import ReplayWitness

WITNESS_BYTES = 32 << 20  # outputs copied per workload and figure, at most
MAX_WITNESSES = 8  # per workload and figure
WITNESS_PREFIX = "witness:"  # keys of the witnesses' outputs in the outputs file


class WitnessLog:
    """Every workload's witnesses: their records for the report, their outputs for the file."""

    def __init__(self) -> None:
        self.records: list[ReplayWitness] = []
        self.outputs: dict[str, list[torch.Tensor]] = {}

    def for_workload(self, workload: str, pool, replays: dict[str, int]) -> "WorkloadWitnesses":
        """The hook graph timing calls after each replay of `workload`, which will replay
        each figure `replays[figure]` times."""
        return WorkloadWitnesses(self, workload, pool, replays)


class WorkloadWitnesses:
    """Draws, replay by replay, which of the candidate's replays to witness: exactly the
    wanted number per figure, each replay equally likely (selection sampling)."""

    def __init__(self, log: WitnessLog, workload: str, pool, replays: dict[str, int]) -> None:
        self.log, self.workload = log, workload
        self.next_round(pool, 0)
        output_bytes = sum(t.numel() * t.element_size() for t in pool.expected[0])
        per_figure = max(1, min(MAX_WITNESSES, WITNESS_BYTES // max(1, output_bytes)))
        self.wanted = {figure: min(per_figure, count) for figure, count in replays.items()}
        self.remaining = dict(replays)

    def next_round(self, pool, round_index: int) -> None:
        """The eager loop draws a pool per round: later calls name sets of this one."""
        self.pool, self.round_index = pool, round_index

    def __call__(self, role: str, figure: str, outputs: list, chosen: list[int]) -> None:
        """After one replay is queued: witness one of its calls, or not."""
        if role != "candidate":
            return
        remaining, wanted = self.remaining[figure], self.wanted[figure]
        self.remaining[figure] = remaining - 1
        if remaining <= 0 or randbelow(remaining) >= wanted:
            return
        self.wanted[figure] = wanted - 1
        call = randbelow(len(outputs))
        produced = outputs[call]
        if not all(type(tensor) is torch.Tensor for tensor in produced):
            return  # a subclass's copy would run its Python; the replay's comparison fails it
        key = f"{WITNESS_PREFIX}{len(self.log.records)}"
        self.log.outputs[key] = [tensor.to("cpu", copy=True) for tensor in produced]  # waits
        self.log.records.append(
            ReplayWitness(
                workload=self.workload,
                figure=figure,
                round_index=self.round_index,
                set_index=chosen[call],
                pool_sets=len(self.pool.sets),
                key=key,
            )
        )
