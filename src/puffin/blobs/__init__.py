"""Blob types on top of the container: one subpackage per standard type, and their rules.

- :mod:`puffin.blobs.dv`: ``deletion-vector-v1``
- :mod:`puffin.blobs.theta`: ``apache-datasketches-theta-v1``
- :mod:`puffin.blobs.single_value`: Iceberg's single-value serialization (what theta hashes)
- :mod:`puffin.blobs.standard`: the standard type and property names; :mod:`puffin.blobs.verify`
  every check
"""
