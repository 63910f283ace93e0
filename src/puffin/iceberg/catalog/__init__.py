"""Catalogs (the embedded SQLite one, pyiceberg's) and the sample table."""
