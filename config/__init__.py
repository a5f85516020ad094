"""Run configuration: the context classes, their settings, checks and environment."""
