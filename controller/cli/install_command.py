"""`controller install EXPORT --profile NAME`: install a tune run's export into a kernel profile.

The export's files must match its checksums, it must have been verified in this environment
(GPU, compute capability, torch, Triton) and for the operator as declared now. An operator
already in the profile is replaced only with `--replace`.
"""

from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "install",
        epilog=(
            "example: controller install runs/tune-20261206T082215Z-18d1ac/export --profile h100"
        ),
        help="install a tune run's export into tuned/NAME/ (a kernel profile)",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("export", type=Path, help="the export/ folder of a finished tune run")
    parser.add_argument("--profile", required=True, metavar="NAME", help="profile name, e.g. h200")
    parser.add_argument("--replace", action="store_true", help="replace an installed operator")
    parser.add_argument(
        "--tuned-root", type=Path, metavar="DIR", help="where profiles live (default: tuned/)"
    )
    parser.set_defaults(func=run)


def run(arguments) -> int:
    import re

    from controller.errors import ControllerError
    from operators.selection import BUILTIN_PROFILES

    if not re.fullmatch(r"[a-z][a-z0-9_]*", arguments.profile) or (
        arguments.profile in BUILTIN_PROFILES
    ):
        raise ControllerError(
            f"--profile {arguments.profile!r}: use a snake_case name other than "
            f"{', '.join(BUILTIN_PROFILES)} (they are built-in profiles)"
        )
    if not arguments.export.is_dir():
        raise ControllerError(f"{arguments.export} does not exist; pass a tune run's export/")
    from controller.profile_install import install_export
    from operators.profiles import TUNED_ROOT

    installed = install_export(
        arguments.export, arguments.profile, arguments.tuned_root or TUNED_ROOT, arguments.replace
    )
    print(f"installed {installed.name} into profile {arguments.profile!r}: {installed}")
    root = f" --tuned-root {arguments.tuned_root}" if arguments.tuned_root else ""
    print(
        f"profile {arguments.profile!r} is unverified until `controller verify --profile "
        f"{arguments.profile}{root}` passes it; it does not load before"
    )
    return 0
