"""One host: a worker thread per listed GPU takes operators from a shared queue and runs each
as a `tune run` child pinned to its GPU (`CUDA_VISIBLE_DEVICES`) while holding its device lock.

Ctrl-C (SIGINT) or SIGTERM stops the batch resumably: each child gets SIGINT, records its run
`interrupted` and exits (one still running after a grace period gets SIGTERM, then SIGKILL, and
its run resumes from its journal); the batch is saved `interrupted` and `--resume` goes on.
"""

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from controller.batch import record as records
from controller.batch.child import PARENT_VARIABLE
from controller.batch.devices import DeviceLock, record_hold
from controller.batch.record import BatchRecord
from controller.batch.runs import LOGS, outcome, run_folder, tune_command

EXIT_INTERRUPTED = 130
STOP_GRACE_S = 20.0  # seconds a run has to stop after each signal of a batch's stop


class BatchInterrupted(Exception):
    """The batch was asked to stop (SIGINT or SIGTERM); it is saved and can be resumed."""


class LocalWorkers:
    """Runs the batch's unfinished operators on `gpus`, one at a time per GPU."""

    def __init__(
        self,
        batch: Path,
        gpus: list[str],
        locks: Path | None = None,
        on_finished: Callable[[str, BatchRecord], None] = lambda operator, record: None,
    ) -> None:
        self.batch = batch
        self.gpus = gpus
        self.locks = locks
        self.on_finished = on_finished
        self._guard = threading.Lock()
        self._children: dict[str, subprocess.Popen] = {}
        self._stopping = threading.Event()
        self._all_done = threading.Event()
        self._running = 0

    def run(self, record: BatchRecord, operators: list[str]) -> BatchRecord:
        """Run `operators`; returns the record (state `interrupted` after a stop)."""
        self.record = record
        work: queue.SimpleQueue[str] = queue.SimpleQueue()
        for name in operators:
            work.put(name)
        threads = [
            threading.Thread(target=self._worker, args=(gpu, work), name=f"gpu-{gpu}")
            for gpu in self.gpus
        ]
        self._running = len(threads)
        # Waiting on an Event, not Thread.join(timeout): a KeyboardInterrupt that lands inside
        # join can leave a live thread looking finished, and the batch would exit under it.
        with _signals_as_interrupt():
            try:
                for thread in threads:
                    thread.start()
                while not self._all_done.wait(0.2):
                    pass
            except (KeyboardInterrupt, BatchInterrupted):
                self._stop_children(signal.SIGINT)
                # A run that has not stopped after a grace period is asked again more
                # firmly; a killed run is resumed from its journal like any crashed run.
                firmer = iter((signal.SIGTERM, signal.SIGKILL))
                deadline = time.monotonic() + STOP_GRACE_S
                while not self._all_done.wait(0.2):
                    if time.monotonic() >= deadline:
                        self._stop_children(next(firmer, signal.SIGKILL))
                        deadline = time.monotonic() + STOP_GRACE_S
                self._save(state="interrupted")
        return self.record

    def _worker(self, gpu: str, work: "queue.SimpleQueue[str]") -> None:
        try:
            self._work_on(gpu, work)
        finally:
            with self._guard:
                self._running -= 1
                if self._running == 0:
                    self._all_done.set()

    def _work_on(self, gpu: str, work: "queue.SimpleQueue[str]") -> None:
        """Lock the GPU, take one operator, run it, unlock; until the queue is empty."""
        lock = DeviceLock(gpu, self.locks)
        while not self._stopping.is_set() and not work.empty():
            if not lock.acquire(blocking=False):  # another process holds this GPU: wait
                time.sleep(0.5)
                continue
            try:
                operator = work.get_nowait()
            except queue.Empty:
                lock.release()
                return
            try:
                self._run_one(gpu, operator, lock)
            finally:
                lock.release()

    def _run_one(self, gpu: str, operator: str, lock: DeviceLock) -> None:
        record_hold(self.batch, "acquired", gpu, operator)
        self._save_entry(operator, status="running", device=gpu)
        try:
            code = self._child(gpu, operator, lock)
        finally:
            record_hold(self.batch, "released", gpu, operator)
        run_dir = run_folder(self.batch, operator)
        status, reason = outcome(self.batch, operator, code)
        if status == "failed" and code < 0 and self._stopping.is_set():
            status, reason = "interrupted", "stopped with the batch; resume the batch"
        self._save_entry(
            operator,
            status=status,
            reason=reason,
            exit_code=code,
            run_dir=str(run_dir) if run_dir else None,
        )
        if status != "interrupted":
            self.on_finished(operator, self.record)

    def _child(self, gpu: str, operator: str, lock: DeviceLock) -> int:
        command = tune_command(self.batch, operator, self.record.options)
        environment = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu, PARENT_VARIABLE: str(os.getpid())}
        (self.batch / LOGS).mkdir(exist_ok=True)
        with open(self.batch / LOGS / f"{operator}.log", "ab") as log:
            log.write(f"$ {' '.join(command)}  (CUDA_VISIBLE_DEVICES={gpu})\n".encode())
            log.flush()
            with self._guard:
                if self._stopping.is_set():
                    return EXIT_INTERRUPTED
                child = subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=environment,
                    start_new_session=True,  # only the batch signals it, and exactly once
                    pass_fds=(lock.descriptor,),  # the lock outlives this process if it dies
                )
                self._children[operator] = child
            code = child.wait()
        with self._guard:
            self._children.pop(operator, None)
        return code

    def _stop_children(self, number: signal.Signals) -> None:
        """Send `number` to every live run (SIGKILL to its whole session, agent included)."""
        with self._guard:
            self._stopping.set()
            for child in self._children.values():
                if child.poll() is not None:
                    continue
                if number == signal.SIGKILL:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
                else:
                    child.send_signal(number)

    def _save_entry(self, operator: str, **changes) -> None:
        with self._guard:
            self.record = self.record.with_entry(operator, **changes)
            records.save(self.batch, self.record)

    def _save(self, **changes) -> None:
        with self._guard:
            self.record = self.record.model_copy(update=changes)
            records.save(self.batch, self.record)


class _signals_as_interrupt:
    """SIGTERM raises BatchInterrupted and SIGINT KeyboardInterrupt in the main thread, even
    where SIGINT was inherited ignored (a job started with `&` by a shell script); the
    previous handlers are restored afterwards."""

    def __enter__(self):
        self._previous = signal.signal(signal.SIGTERM, self._raise)
        self._previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
        return self

    def __exit__(self, *exc_info):
        signal.signal(signal.SIGTERM, self._previous)
        signal.signal(signal.SIGINT, self._previous_int)
        return False

    @staticmethod
    def _raise(signum, frame):
        raise BatchInterrupted(f"signal {signum}")
