"""`controller generate`: render catalog operators into FlashInfer Trace task packages."""

from pathlib import Path

DEFAULT_OUTPUT = Path("runs/tasks")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="write task packages for catalog operators",
        description=(
            "Write one task package per operator (definition, workloads, contract, baseline "
            "solution, identity digest) for the evaluator and agents."
        ),
    )
    parser.add_argument("operators", nargs="*", metavar="OP", help="operators (default: all)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="parent folder")
    parser.add_argument("--list", action="store_true", help="list the operators and exit")
    parser.add_argument(
        "--force", action="store_true", help="replace packages this command generated before"
    )
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from gates.tasks.generation import write_package
    from operators import REGISTRY

    if arguments.list:
        for declaration in REGISTRY:
            print(f"{declaration.name}  ({len(declaration.workloads)} workloads)")
        return 0
    names = arguments.operators or REGISTRY.names()
    declarations = [REGISTRY.declaration(name) for name in names]
    for declaration in declarations:
        folder, digest = write_package(declaration, arguments.output, force=arguments.force)
        print(f"{declaration.name}: {folder} sha256:{digest[:16]}")
    return 0
