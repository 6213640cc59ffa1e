"""The conformance kit: check any scheduler, or any engine's trace, against the rules."""
