"""The `controller` command: one subcommand module per verb, user errors as one line, exit 2."""

import argparse
import importlib
import sys

SUBCOMMANDS = (
    "controller.cli.catalog_command",
    "controller.cli.example_command",
    "controller.cli.sandbox_command",
    "controller.cli.capture_command",
    "controller.cli.skeleton_command",
    "controller.cli.calibrate_command",
    "controller.cli.profile_command",
    "controller.cli.generate_command",
    "controller.cli.evaluate_command",
    "controller.cli.register_command",
    "controller.cli.tune_command",
    "controller.cli.tune_all_command",
    "controller.cli.install_command",
    "controller.cli.verify_command",
    "controller.cli.optimize_command",
    "controller.cli.runs_command",
    "controller.cli.pack_command",
)

USER_ERRORS = (
    ("operators.errors", "OperatorError"),
    ("sandbox.errors", "FenceError"),
    ("gates.errors", "GateError"),
    ("controller.errors", "ControllerError"),
    ("pydantic", "ValidationError"),
)

EXIT_USAGE = 2
EXIT_ENVIRONMENT = 75  # a full or failing disk: fix the machine, then run the command again


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
    from controller.agents.key_custody import refuse_same_user_inspection, scrub_initial_environment

    scrub_initial_environment()  # no API key left readable in /proc/PID/environ
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if getattr(arguments, "unfenced", False):
        refuse_same_user_inspection()  # unfenced commands run as this user
    try:
        return int(arguments.func(arguments) or 0)
    except OSError as error:
        from controller.errors import environment_failure

        failure = environment_failure(error)
        if failure is None:
            raise
        print(
            f"controller: error: {failure}; fix that, then run the command again", file=sys.stderr
        )
        return EXIT_ENVIRONMENT
    except Exception as error:
        if not _is_user_error(error):
            raise
        print(f"controller: error: {_one_line(error)}", file=sys.stderr)
        return EXIT_USAGE


def _one_line(error: Exception) -> str:
    """The first line of the message; a pydantic error as `field: rule (got value)`."""
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or type(error).__name__
        return f"{field}: {first['msg'].lower()} (got {first.get('input')!r})"
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


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
