"""Row-level deletes: deletion vectors of a table, the one DV merge, delete and upgrade commits."""
