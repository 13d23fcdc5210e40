"""`controller catalog`: list the registered operators, their contracts and workloads."""

import json


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "catalog",
        help="list the registered operators",
        description="List every registered operator: summary, contract, axes and workloads.",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(func=run)


def run(arguments) -> int:
    from operators import REGISTRY

    rows = []
    for declaration in REGISTRY:
        rows.append(
            {
                "name": declaration.name,
                "summary": declaration.summary,
                "contract": declaration.contract.describe(),
                "inputs": {t.name: list(t.shape) for t in declaration.inputs},
                "workloads": {w.name: w.axes for w in declaration.workloads},
                "preferred": "triton" if declaration.preferred else "reference",
            }
        )
    if arguments.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  [{row['preferred']}]  {row['summary']}")
        print(f"{'':<{width}}  contract: {row['contract']}")
        print(f"{'':<{width}}  workloads: {len(row['workloads'])}")
    return 0
