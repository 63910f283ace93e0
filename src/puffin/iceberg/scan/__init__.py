"""Scan planning, column resolution, reading data files with their deletes applied, row filters."""
