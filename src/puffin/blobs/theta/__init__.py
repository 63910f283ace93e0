"""``apache-datasketches-theta-v1``: the hash, the sketch, its bytes, building, blobs in files."""
