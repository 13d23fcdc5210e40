"""The kernel evaluator: judges a solution on a task package, in processes it cannot reach.

Design (why the reference outputs are out of the solution's reach):

- `evaluation.evaluate` (the controller side) verifies the task and solution digests, writes
  a request with a fresh nonce into a private folder, and runs two workers, each in its own
  process group (killed with the group on timeout), forked from a zygote that has imported
  torch, Triton and dynamo and nothing else (`zygote.py`), or started fresh.
- The *candidate* worker draws every input (seeds derived from the nonce, so unknown ahead of
  time) before importing the solution, arms the detectors (identity snapshots, an audit hook,
  thread and stream recorders), imports the solution, calls it on every case under an ATen
  trace that poisons its fresh allocations, and saves its raw outputs. On CUDA it also times
  the baseline, incumbent and candidate. It never computes a reference output.
- The *judge* worker never imports the solution: it recomputes the inputs and the reference
  outputs itself, loads the candidate's outputs as plain tensors (`weights_only`), and checks
  the contract, input digests, repeatability, and the patterns of known cheats.

So no reference output ever exists in a process the solution ran in; walking `gc` or frames
there finds none (and is itself reported by the audit hook). What an in-process solution can
still do is listed in docs/evaluator.md under "Limits"; on CUDA the verdicts come from
inspected CUDA-graph replays, where no Python of the solution runs.
"""
