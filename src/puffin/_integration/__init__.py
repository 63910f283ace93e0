"""Plumbing shared by the integrations (CLI, Iceberg, Spark)."""
