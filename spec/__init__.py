"""The stallfree contract as executable code: types, rules (by ID), the monitor, workloads.

Standard library only. Start with `RULES` (every rule, its statement, its predicates) and `Monitor`.
One module is the exception and is not imported here: `stallfree.spec.machine`, the Hypothesis state
machine, needs hypothesis (the `dev` or `conform` extra).
"""

from .errors import FieldTypeError, InvalidField, ProtocolError, RuleViolation
from .facts import StepFacts
from .monitor import Monitor, refusal
from .rules import BY_ID, RULE_IDS, RULES, Rule, select
from .shadow import Shadow, Track
from .types import MAX_INT, Config, Entry, Plan, Request, admissible, check_int
from .verdict import PROTOCOL
from .workload import Arrival, RunStats, Workload, play, work_bound

__all__ = [
    "BY_ID", "MAX_INT", "PROTOCOL", "RULES", "RULE_IDS",
    "Arrival", "Config", "Entry", "FieldTypeError", "InvalidField", "Monitor", "Plan",
    "ProtocolError", "Request", "Rule", "RuleViolation", "RunStats", "Shadow", "StepFacts", "Track",
    "Workload", "admissible", "check_int", "play", "refusal", "select", "work_bound",
]
