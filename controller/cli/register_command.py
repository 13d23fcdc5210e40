"""Placeholder for the `register` subcommands until its issue lands."""


def add_parser(subparsers) -> None:
    return None
