"""graphs."""
