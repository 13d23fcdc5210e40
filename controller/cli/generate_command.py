"""`controller generate`: render catalog operators into FlashInfer Trace task packages."""

from pathlib import Path

DEFAULT_OUTPUT = Path("runs/tasks")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate",
        epilog="example: controller generate rms_norm rotate_qk --output runs/tasks",
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
        "--captured",
        type=Path,
        metavar="DIR",
        help="workloads from a `controller capture-ops` folder (weight = call count); "
        "default operators: those the capture holds",
    )
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
    files_of, calibrated = None, []
    if arguments.captured is not None:
        from gates.calibration.contract_file import calibrated_operators
        from gates.tasks.captured import captured_operators, render_captured_package

        names = captured_operators(arguments.captured, arguments.operators)
        calibrated = calibrated_operators(arguments.captured, names)

        def files_of(declaration):
            return render_captured_package(declaration, arguments.captured)

    declarations = [REGISTRY.declaration(name) for name in names]
    for declaration in declarations:
        files = files_of(declaration) if files_of else None
        folder, digest = write_package(
            declaration, arguments.output, force=arguments.force, files=files
        )
        note = " (calibrated contract: FP64 oracle too)" if declaration.name in calibrated else ""
        print(f"{declaration.name}: {folder} sha256:{digest[:16]}{note}")
    return 0
