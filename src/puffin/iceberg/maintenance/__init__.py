"""Keeping a table healthy: expiring snapshots, and the guard every maintenance delete takes."""
