"""Subcommands of the `stallfree` CLI, one module each."""
