"""Errors of the contract: what a caller did wrong, and what a scheduler did wrong.

Every error names the field (or rule) and the value, so a message alone says what to fix.
"""

from __future__ import annotations


class InvalidField(ValueError):
    """A field has the right type but a value the contract does not allow (NEVER-FIT among them)."""


class FieldTypeError(TypeError):
    """A field is not an int (a bool, a float, a str, None ... are refused, never coerced)."""


class ProtocolError(RuntimeError):
    """A call out of order: complete() without schedule(), a plan applied twice, schedule() twice."""


class RuleViolation(AssertionError):
    """A scheduler broke a rule of the contract. `rule` is its ID, `step` the step it happened at."""

    def __init__(self, rule: str, step: int, message: str) -> None:
        super().__init__(f"{rule} at step {step}: {message}")
        self.rule = rule
        self.step = step
        self.message = message
