"""Plumbing the integrations share: optional dependencies, the one progress display."""
