"""A run that ignores the batch's SIGINT cannot hang Ctrl-C: it gets SIGTERM, then SIGKILL, and
the batch still stops `interrupted` with the operator resumable."""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BATCH_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from controller.batch import record as records, workers
    from controller.batch.record import BatchRecord, OperatorEntry, RunOptions

    batch, child = Path(sys.argv[1]), sys.argv[2]
    workers.STOP_GRACE_S = 1.0
    workers.tune_command = lambda batch, operator, options: [sys.executable, child]
    options = RunOptions(agent="autotune", device="cpu", target=str(batch), unfenced=True)
    record = BatchRecord(
        batch_id="batch-test", created_at="now", operators=("rms_norm",), options=options,
        entries={"rms_norm": OperatorEntry()},
    )
    records.save(batch, record)
    done = workers.LocalWorkers(batch, ["0"], locks=batch / "locks").run(record, ["rms_norm"])
    print(done.state, done.entries["rms_norm"].status, flush=True)
    """
)
STUBBORN_RUN = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(sys.argv[0]).with_suffix(".started").touch()
    time.sleep(600)
    """
)


def test_a_run_that_ignores_the_stop_is_ended_and_left_resumable(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    child = tmp_path / "stubborn.py"
    child.write_text(STUBBORN_RUN)
    process = subprocess.Popen(
        [sys.executable, "-c", BATCH_SCRIPT, str(batch), str(child)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not child.with_suffix(".started").exists():
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "the stubborn run never started"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert output.strip().splitlines()[-1] == "interrupted interrupted", output
    saved = json.loads((batch / "batch.json").read_text())
    assert saved["entries"]["rms_norm"]["status"] == "interrupted"
