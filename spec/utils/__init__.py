"""Generic helpers of layer 0, no part of any contract: an in-process timer (alarm), loading a
MODULE:NAME factory (loader), deep copies for a branching search (copies)."""
