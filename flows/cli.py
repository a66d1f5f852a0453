"""The ``dorylus`` command line.

Each subcommand lives in ``flows/commands/<name>.py`` with ``add_parser(subparsers)``;
the parser's ``handler(args) -> dict`` returns the result that ``--json`` prints.
User errors (``DorylusError``) print one line and exit 2, with no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import pkgutil
import sys

from stages.errors import DorylusError



def _command_modules() -> list[str]:
    import flows.commands

    return sorted(m.name for m in pkgutil.iter_modules(flows.commands.__path__))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dorylus", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _command_modules():
        importlib.import_module(f"flows.commands.{name}").add_parser(sub)
    return parser


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options every stage command takes."""
    parser.add_argument("--store", metavar="URI", help="artifact store: a folder or s3://BUCKET/PREFIX (default: .dorylus/store)")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the artifact URI and key figures")
    parser.add_argument("--force", action="store_true", help="recompute even if the artifact is cached")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        result = args.handler(args)
    except DorylusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if getattr(args, "json", False):
        print(json.dumps(result, default=str))
    else:
        _print_human(result)
    return 0


def _print_human(result: dict) -> None:
    state = "cached" if result.get("cached") else "done"
    print(f"{result.get('stage', 'result')} {state}: {result.get('uri', '')}")
    for key, value in result.items():
        if key not in ("stage", "uri", "cached"):
            print(f"  {key}: {value}")


if __name__ == "__main__":
    sys.exit(main())
