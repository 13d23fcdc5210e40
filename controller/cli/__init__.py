"""The `controller` command: one subcommand module per verb, user errors as one line, exit 2."""

import argparse
import importlib
import sys

SUBCOMMANDS = (
    "controller.cli.catalog_command",
    "controller.cli.example_command",
    "controller.cli.sandbox_command",
    "controller.cli.generate_command",
    "controller.cli.evaluate_command",
    "controller.cli.register_command",
    "controller.cli.tune_command",
    "controller.cli.runs_command",
)

USER_ERRORS = (
    ("operators.errors", "OperatorError"),
    ("sandbox.errors", "FenceError"),
    ("gates.errors", "GateError"),
    ("controller.errors", "ControllerError"),
    ("pydantic", "ValidationError"),
)

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="controller",
        description=(
            "Run coding-agent sessions that register operators and tune Triton kernels, "
            "inside a fence, judged by gates the agent cannot touch."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in SUBCOMMANDS:
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    try:
        return int(arguments.func(arguments) or 0)
    except Exception as error:
        if not _is_user_error(error):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"controller: error: {message}", file=sys.stderr)
        return EXIT_USAGE


def _is_user_error(error: Exception) -> bool:
    """User errors are the layers' own error types; only modules already imported can raise."""
    for module_name, class_name in USER_ERRORS:
        module = sys.modules.get(module_name)
        error_type = getattr(module, class_name, None) if module else None
        if error_type is not None and isinstance(error, error_type):
            return True
    return False


if __name__ == "__main__":
    sys.exit(main())
