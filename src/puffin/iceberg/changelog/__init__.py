"""What changed between two snapshots, row by row: the changelog (:func:`changes`)."""
