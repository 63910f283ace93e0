"""``puffin conformance run|export``: an implementation checked against the shipped corpus,
and the corpus written out as plain files for other languages' tests.

Registered as a ``puffin`` plugin through :func:`register_cli`.  Nothing heavy is imported
until a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "register_cli", "run_export", "run_run"]

_EPILOG_RUN = """\
examples:
  puffin conformance run                          # this library against the shipped corpus
  puffin conformance run --adapter pyiceberg --json
  puffin conformance run --impl "java -jar my-adapter.jar" --tier deletion-vector
adapters: puffin, pyiceberg, datasketches, pyroaring, java, iceberg-java (Iceberg Java 1.10.2
itself, .venv-java); for the table tier also iceberg-rust, duckdb, duckdb-1.5.5
(.venv-duckdb15) and sail (.venv-sail).  --impl CMD runs any program that speaks the
JSON-lines protocol of docs/conformance.md.  Exit status 1 when a vector fails.
"""


_EPILOG_EXPORT = """\
examples:
  puffin conformance export ./puffin-corpus
  puffin conformance export ./dv-vectors --tier deletion-vector --tier table
Every vector with its input files and an index.json of expectations (docs/conformance.md);
the table tier's tables are built under DIR/table/NAME and each vector names its
metadata.json ("materialized"). Iceberg metadata holds absolute paths: read the tables where
they were exported.
"""


def register_cli(subparsers: Any) -> None:
    """Add the ``conformance`` command group to the ``puffin`` command."""
    fmt = argparse.RawDescriptionHelpFormatter
    parents = _parents()
    group = subparsers.add_parser(
        "conformance",
        help="run an implementation on the conformance corpus",
        description="Vectors other Puffin implementations test against, and their runner.",
        formatter_class=fmt,
    )
    group.set_defaults(func=lambda _args: (group.print_help(sys.stderr), 2)[1])
    commands = group.add_subparsers(dest="conformance_command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run the corpus against an implementation",
        parents=parents,
        epilog=_EPILOG_RUN,
        formatter_class=fmt,
    )
    who = run.add_mutually_exclusive_group()
    who.add_argument("--adapter", default="puffin", metavar="NAME", help="a built-in adapter")
    who.add_argument("--impl", metavar="CMD", help="a program speaking the JSON-lines protocol")
    run.add_argument(
        "--tier",
        action="append",
        metavar="T",
        help="only this tier (repeatable): container, deletion-vector, theta, writer, captured, "
        "table",
    )
    run.add_argument(
        "--corpus", metavar="DIR", help="a corpus directory (default: the shipped one)"
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(func=run_run)
    export = commands.add_parser(
        "export",
        help="write the corpus as plain files (tables built) for any language's tests",
        parents=parents,
        epilog=_EPILOG_EXPORT,
        formatter_class=fmt,
    )
    export.add_argument("folder", metavar="DIR", help="a new or empty folder")
    export.add_argument("--tier", action="append", metavar="T", help="only this tier")
    export.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    from puffin.conformance.export import export_corpus

    _check_tiers(args.tier)
    result = export_corpus(Path(args.folder), args.tier)
    total = sum(result.vectors.values())
    print(f"exported {total} vectors into {result.target} ({result.tables} tables built)")
    for tier, count in result.vectors.items():
        print(f"  {tier:16} {count}")
    return 0


def _parents() -> list[argparse.ArgumentParser]:
    from puffin.cli import common_options

    return [common_options()]


def run_run(args: argparse.Namespace) -> int:
    from puffin.conformance.adapters import make_adapter
    from puffin.conformance.adapters._process import ProcessAdapter
    from puffin.conformance.runner import corpus_dir, load_vectors, run_vectors

    _check_tiers(args.tier)
    root = Path(args.corpus) if args.corpus else corpus_dir()
    vectors = load_vectors(root, args.tier)
    adapter = ProcessAdapter(args.impl) if args.impl else make_adapter(args.adapter)
    try:
        report = run_vectors(adapter, vectors, root, known_as=None if args.impl else args.adapter)
    finally:
        adapter.close()
    doc = report.to_json()
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        _print_text(doc)
    return 1 if doc["failed"] else 0


def _check_tiers(tiers: list[str] | None) -> None:
    from puffin.conformance.results import TIERS
    from puffin.errors import UsageError

    for tier in tiers or ():
        if tier not in TIERS:
            raise UsageError(f"unknown tier {tier!r}; tiers: {', '.join(TIERS)}")


def _print_text(doc: dict[str, Any]) -> None:
    print(
        f"{doc['adapter']}: {doc['passed']}/{doc['total']} passed, {doc['failed']} failed "
        f"({doc['unexplained']} not explained), {doc['skipped']} skipped (operations the "
        "adapter does not speak)"
    )
    for tier, counts in doc["tiers"].items():
        print(f"  {tier:16} {counts['passed']}/{counts['total']}")
    for failure in doc["failures"]:
        print(f"FAIL {failure['id']}: {failure['reason']}")
        if failure["known"]:
            print(f"     known: {failure['known']}")


def main(argv: list[str] | None = None) -> int:
    """``python -m puffin.conformance.cli``: the same commands without the ``puffin`` entry."""
    parser = argparse.ArgumentParser(prog="puffin")
    register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
