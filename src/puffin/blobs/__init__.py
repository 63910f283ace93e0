"""Blob types: one module each.

- :mod:`puffin.blobs.deletion_vector`: ``deletion-vector-v1``
- :mod:`puffin.blobs.theta`: ``apache-datasketches-theta-v1``
- :mod:`puffin.blobs.types`: Iceberg primitive types and the Arrow <-> Iceberg type map
- :mod:`puffin.blobs.single_value`: Iceberg's single-value serialization (what theta hashes)
"""
