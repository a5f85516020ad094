"""Threads and what is kept per thread: checkpointers, stores, locks, the tool-output archive."""
