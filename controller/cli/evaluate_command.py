"""Placeholder for the `evaluate` subcommands until its issue lands."""


def add_parser(subparsers) -> None:
    return None
