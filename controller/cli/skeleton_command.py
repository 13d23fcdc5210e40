"""`controller skeleton CHECKPOINT... --output DIR`: a random-weight copy of a checkpoint made
from its safetensors headers alone, for capturing a model whose weights are not here."""

from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "skeleton",
        epilog="example: controller skeleton model.safetensors --output runs/skeleton",
        help="make a random-weight checkpoint from safetensors headers alone",
        description=(
            "Read only the headers (names, dtypes, shapes) of one or more .safetensors files "
            "and write files with the same tensors holding seeded random values, plus "
            "skeleton.json recording the seed and each source's header digest. Capturing "
            "a model from the skeleton gives the same call layouts and counts as from the "
            "real weights."
        ),
    )
    parser.add_argument("checkpoint", nargs="+", type=Path, help=".safetensors files")
    parser.add_argument("--output", required=True, type=Path, metavar="DIR")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random values (0)")
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from controller.checkpoints.skeleton import make_skeleton

    record = make_skeleton(arguments.checkpoint, arguments.output, arguments.seed)
    for file in record.files:
        print(f"{file.source}: {file.tensors} tensors, {file.bytes} bytes -> {file.output}")
    print(f"seed {record.seed}; recorded in {arguments.output / 'skeleton.json'}")
    return 0
