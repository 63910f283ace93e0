"""The rows a condition matches in planned data files: what a delete or an overwrite removes.

Rows are read by the one row reader (:class:`~puffin.iceberg.scan.rows.RowReader`), with no
delete applied (a match is merged with the live deletes afterwards) and each row's position
in its file. A job prepares once for all its files: the condition bound, a long ``in`` list
sorted (:class:`~puffin.iceberg.scan.keys.KeyMatch`), the reader and its shapes per file
schema. A file whose bounds or column metrics rule out every match is not opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffin.errors import UnsupportedTableError
from puffin.iceberg.scan.rows import POSITION, RowReader

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

    from puffin.iceberg.scan.keys import KeyMatch
    from puffin.iceberg.scan.plan import PlannedFile
    from puffin.support.progress import Progress

__all__ = ["matching_by_file", "matching_positions"]


def matching_by_file(
    table: Table,
    planned: Sequence[PlannedFile],
    bound: BooleanExpression,
    *,
    progress: Progress | None = None,
) -> dict[str, npt.NDArray[np.int64]]:
    """``{data file path: positions}`` that ``bound`` matches, files without a match left
    out (what a delete or an overwrite deletes, before merging with the live deletes);
    ``progress`` counts each file's rows once it is done (read or ruled out).

    A file whose column metrics rule every match out is not opened: pyiceberg's inclusive
    metrics evaluator decides, as in its own planning (missing metrics: the file is read).
    Without it, every delete read every data file, and a table of many small appends got
    slower to delete from with each one."""
    from puffin.iceberg.scan.bounds import bound_test, sorting_once
    from puffin.iceberg.scan.keys import KeyMatch

    with sorting_once():  # a long key list sorted once for both
        quick = bound_test(bound, in_limit=None) or (lambda _: True)  # any length of in list
        job = _Job.of(table, bound, KeyMatch.of(bound))  # bound once per job, not per file
    might_match = _metrics_filter(bound)
    out = {}
    for number, p in enumerate(planned, 1):
        if quick(p.data_file) and might_match(p.data_file):
            found = matching_positions(table, p, bound, job)
            if len(found):
                out[p.path] = found
        if progress is not None:
            progress.update(p.record_count, note=f"file {number}/{len(planned)}")
    return out


@dataclass
class _Job:
    """What one job prepares once for all its files: the row reader (which keeps what it
    makes per file schema) and, for a long ``in`` list, its keys sorted."""

    reader: RowReader
    keys: KeyMatch | None

    @classmethod
    def of(cls, table: Table, bound: BooleanExpression, keys: KeyMatch | None = None) -> _Job:
        """A job matching ``bound`` in ``table``'s files, by ``keys`` where given (then
        only their column is read, and the keys are found in it by binary search)."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.expressions.visitors import extract_field_ids
        from pyiceberg.schema import prune_columns

        schema = table.schema()
        if keys is not None and keys.field_id not in {f.field_id for f in schema.fields}:
            keys = None  # a field inside a struct: the general path
        # By keys: only their column, no filter (the keys are matched after); else the
        # condition's columns, the condition bound once for the job.
        ids = {keys.field_id} if keys is not None else extract_field_ids(bound)
        projection = prune_columns(schema, ids, select_full_types=False)
        reader = RowReader(
            table, projection, AlwaysTrue(), True, None, [], {}, None,
            positions=True, bound=None if keys is not None else bound,
        )  # fmt: skip
        return cls(reader, keys)


def _metrics_filter(bound: BooleanExpression) -> Any:
    """A ``DataFile -> bool`` that is False only when the file's metrics exclude a match:
    pyiceberg's inclusive metrics visitor on the condition already bound (its evaluator's
    constructor would bind it again), every file kept when there is nothing to decide."""
    from pyiceberg.expressions import AlwaysFalse, AlwaysTrue
    from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluationVisitor, visit

    if bound in (AlwaysTrue(), AlwaysFalse()):
        return lambda df: True
    # A negative record count (old imports) says nothing about the rows, as in pyiceberg.
    return lambda df: df.record_count < 0 or visit(bound, _InclusiveMetricsEvaluationVisitor(df))


def matching_positions(
    table: Table, planned: PlannedFile, bound: BooleanExpression, job: _Job | None = None
) -> npt.NDArray[np.int64]:
    """Row positions of one data file that ``bound`` matches, deleted or not, sorted.
    ``job``: what :func:`matching_by_file` prepared once for every file."""
    import numpy as np
    from pyiceberg.expressions import AlwaysFalse, AlwaysTrue
    from pyiceberg.manifest import FileFormat

    df = planned.data_file
    if df.file_format != FileFormat.PARQUET:
        raise UnsupportedTableError(f"data file {planned.path} is {df.file_format}, not Parquet")
    if bound == AlwaysFalse():
        return np.empty(0, dtype=np.int64)
    if bound == AlwaysTrue():
        return np.arange(planned.record_count, dtype=np.int64)
    if job is None:
        from puffin.iceberg.scan.keys import KeyMatch

        job = _Job.of(table, bound, KeyMatch.of(bound))
    keys, parts = job.keys, []
    wanted = None if keys is None else keys.keys_for(df)
    if wanted is not None and not len(wanted):
        return np.empty(0, dtype=np.int64)
    for batch in job.reader.file_batches(planned):
        pos = batch.column(POSITION).to_numpy()
        if keys is not None and wanted is not None:
            pos = pos[keys.positions(batch.column(0), wanted)]
        parts.append(pos)
    # The reader yields rows in file order: the positions are sorted already.
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
