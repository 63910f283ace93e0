"""The ``puffin table`` command, a CLI plugin (entry point ``puffin.iceberg.cli:register_cli``).

:mod:`.commands` holds statistics, verify and sample; :mod:`.deletes` the row-delete commands.
"""

from puffin.iceberg.cli.commands import register_cli

__all__ = ["register_cli"]
