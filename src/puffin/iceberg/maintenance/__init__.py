"""Keeping a table healthy: expiring snapshots, removing orphans, and the guard every
maintenance delete takes."""
