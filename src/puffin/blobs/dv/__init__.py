"""``deletion-vector-v1``: the payload, checked portable Roaring, positions, DV blobs in files."""
