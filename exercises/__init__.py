"""Exercises graded by stallfree: `stallfree exercise N FILE`."""
