"""Placeholder for the `runs` subcommands until its issue lands."""


def add_parser(subparsers) -> None:
    return None
