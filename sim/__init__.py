"""Simulator: replays traces through any scheduler with step times from the cost model."""
