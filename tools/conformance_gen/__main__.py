"""``python -m tools.conformance_gen DIR``: write the conformance corpus into DIR."""

from __future__ import annotations

import sys

from tools.conformance_gen.generate import write_corpus


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.conformance_gen DIR", file=sys.stderr)
        return 2
    count = write_corpus(argv[0])
    print(f"wrote {count} vectors to {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
