"""Table verification: statistics files, deletion vectors, v3 row lineage."""
