"""File access: local and remote sources and sinks, and what a location means."""
