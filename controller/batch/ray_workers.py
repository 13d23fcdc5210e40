"""Past one host: each operator's `tune run` is a Ray task that asks for one GPU, and Ray
decides where and when it runs (no scheduler of ours). The batch folder must be on storage
every node sees; results, summary and `--resume` work as on one host.

A task pins its run to the GPU Ray gave it (Ray sets `CUDA_VISIBLE_DEVICES`), takes that GPU's
device lock on its node and records the hold as `<node>:<gpu>`. Ctrl-C cancels the tasks: each
task passes SIGINT to its run, which records itself `interrupted`, ready for `--resume`.
"""

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from controller.batch import record as records
from controller.batch.child import PARENT_VARIABLE
from controller.batch.devices import DeviceLock, record_hold
from controller.batch.record import BatchRecord, RunOptions
from controller.batch.runs import LOGS, outcome, run_folder, tune_command

EXIT_INTERRUPTED = 130
CANCEL_GRACE_S = 60.0


def run_operator_task(batch: str, operator: str, options: dict) -> tuple[int, str]:
    """The body of one Ray task: the operator's tune run on the GPU Ray assigned."""
    import ray

    context = ray.get_runtime_context()
    gpus = [str(gpu) for gpu in context.get_accelerator_ids().get("GPU", [])]
    node = context.get_node_id()[:8]
    device = f"{node}:{','.join(gpus)}" if gpus else f"{node}:{context.get_task_id()[:8]}"
    folder = Path(batch)
    lock = DeviceLock(gpus[0]) if len(gpus) == 1 else None
    if lock is not None:
        lock.acquire()
    record_hold(folder, "acquired", device, operator, pid=os.getpid())
    command = tune_command(folder, operator, RunOptions(**options))
    (folder / LOGS).mkdir(exist_ok=True)
    try:
        with open(folder / LOGS / f"{operator}.log", "ab") as log:
            log.write(f"$ {' '.join(command)}  (Ray, {device})\n".encode())
            log.flush()
            child = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, PARENT_VARIABLE: str(os.getpid())},
                start_new_session=True,
                pass_fds=(lock.descriptor,) if lock and lock.descriptor is not None else (),
            )
            try:
                return child.wait(), device
            except KeyboardInterrupt:  # ray.cancel: stop the run resumably
                child.send_signal(signal.SIGINT)
                return child.wait(timeout=CANCEL_GRACE_S), device
    finally:
        record_hold(folder, "released", device, operator)
        if lock is not None:
            lock.release()


class RayWorkers:
    """Submits the batch's unfinished operators to a Ray cluster, one GPU each."""

    def __init__(
        self,
        batch: Path,
        address: str,
        gpu_resource: str = "GPU",
        init_options: dict | None = None,
        on_finished: Callable[[str, BatchRecord], None] = lambda operator, record: None,
    ) -> None:
        self.batch = batch
        self.address = address
        self.gpu_resource = gpu_resource
        self.init_options = init_options or {}
        self.on_finished = on_finished

    def run(self, record: BatchRecord, operators: list[str]) -> BatchRecord:
        import ray

        from controller.errors import ControllerError

        try:
            ray.init(address=self.address, log_to_driver=False, **self.init_options)
        except (ConnectionError, ValueError, RuntimeError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise ControllerError(f"--ray {self.address}: cannot connect ({first})") from None
        try:
            return self._submit_and_wait(ray, record, operators)
        finally:
            ray.shutdown()

    def _submit_and_wait(self, ray, record: BatchRecord, operators: list[str]) -> BatchRecord:
        if self.gpu_resource == "GPU":
            remote = ray.remote(num_gpus=1, max_retries=0)(run_operator_task)
        else:
            resources = {self.gpu_resource: 1}
            remote = ray.remote(resources=resources, max_retries=0)(run_operator_task)
        options = record.options.model_dump()
        pending = {}
        for name in operators:
            pending[remote.remote(str(self.batch), name, options)] = name
            record = record.with_entry(name, status="running")
        records.save(self.batch, record)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for reference in ready:
                    record = self._finished(ray, record, pending.pop(reference), reference)
        except KeyboardInterrupt:
            for reference in pending:
                ray.cancel(reference)
            for reference, name in pending.items():
                record = self._finished(ray, record, name, reference)
            record = record.model_copy(update={"state": "interrupted"})
            records.save(self.batch, record)
        return record

    def _finished(self, ray, record: BatchRecord, operator: str, reference) -> BatchRecord:
        try:
            code, device = ray.get(reference)
        except Exception as error:  # a task lost with its node, or cancelled before it ran
            code, device = EXIT_INTERRUPTED, None
            reason = f"Ray task ended: {type(error).__name__}; resume the batch"
        else:
            reason = ""
        status, why = outcome(self.batch, operator, code)
        if code == EXIT_INTERRUPTED:
            status = "interrupted"
        run_dir = run_folder(self.batch, operator)
        record = record.with_entry(
            operator,
            status=status,
            reason=reason or why,
            exit_code=code,
            device=device,
            run_dir=str(run_dir) if run_dir else None,
        )
        records.save(self.batch, record)
        if status != "interrupted":
            self.on_finished(operator, record)
        return record
