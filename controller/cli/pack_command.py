"""`controller pack RUN ARCHIVE`: an optimize batch in one archive for another machine.

The archive leaves out the captured inputs (the safetensors fixtures and the git objects that
store them, most of a batch's bytes) and lists them with their digests; `controller optimize
--resume RUN` on the other machine records the driver's capture again and puts each one back
only where its bytes are the same (`controller/optimize/travel.py`).
"""

from pathlib import Path

from controller.cli.run_options import DEFAULT_RUNS_DIR


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "pack",
        help="pack an optimize batch for another machine, without its captured inputs",
        description="Pack an optimize batch into one archive for another machine. The captured "
        "inputs are left out and recorded again, checked by digest, when `controller optimize "
        "--resume` continues the batch there: `tar xzf ARCHIVE -C runs`, then `controller "
        "optimize --resume runs/<batch>`.",
        epilog="example: controller pack runs/optimize-20261206T082027Z-6c8c57 batch.tar.gz",
    )
    parser.add_argument("run", metavar="RUN", help="optimize batch folder, or its id")
    parser.add_argument("archive", type=Path, metavar="ARCHIVE", help="the .tar.gz to write")
    parser.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR, metavar="DIR")
    parser.set_defaults(func=pack)


def pack(arguments) -> int:
    from controller.errors import ControllerError
    from controller.optimize.travel import pack_batch
    from controller.runs.store import RunStore

    store = RunStore.open(arguments.run, arguments.runs_dir)
    manifest, _ = store.manifest_for_reading()
    if manifest.flow != "optimize":
        raise ControllerError(
            f"pack: {store.run_dir} is a {manifest.flow} run; only optimize batches are packed"
        )
    if not arguments.archive.name.endswith((".tar.gz", ".tgz")):
        raise ControllerError(f"pack: {arguments.archive} must end in .tar.gz or .tgz")
    with store.locked():  # not while a process works on it
        travel = pack_batch(store.run_dir, arguments.archive)
    left = sum(item.size for item in travel.left_out)
    size = arguments.archive.stat().st_size
    print(
        f"controller: packed {store.run_dir.name} into {arguments.archive} ({size / 1e6:.1f} MB); "
        f"{len(travel.left_out)} captured input files ({left / 1e6:.1f} MB) left out, recorded "
        "again on --resume"
    )
    return 0
