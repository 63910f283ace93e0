"""A Sail Spark Connect server on 127.0.0.1 (inside ``.venv-sail``) until stdin closes.

Usage: python _sail_server.py. Prints the port it listens on (the OS picks a free one),
then serves until its standard input reaches end of file, and stops the server.
"""

from __future__ import annotations

import sys

from pysail.spark import SparkConnectServer


def main() -> None:
    """Serve on a free loopback port; the parent owns the lifetime through our stdin."""
    server = SparkConnectServer(ip="127.0.0.1", port=0)
    server.start(background=True)
    address = server.listening_address
    if address is None:
        raise SystemExit("Sail did not start listening")
    print(address[1], flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
