"""Blob types: one module each.

- :mod:`puffin.blobs.dv.files`: ``deletion-vector-v1``
- :mod:`puffin.blobs.theta.files`: ``apache-datasketches-theta-v1``
- :mod:`puffin.types`: Iceberg primitive types and the Arrow <-> Iceberg type map
- :mod:`puffin.blobs.single_value`: Iceberg's single-value serialization (what theta hashes)
"""
