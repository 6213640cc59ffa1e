"""stallfree: a formally specified reference for continuous batching with a token budget and
chunked prefill. Subpackages: `spec` (the contract), `reference` (the scheduler), and the CLI."""

__version__ = "0.1.0"
