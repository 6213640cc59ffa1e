"""The stallfree contract as executable code: types, rules (by ID), the monitor, workloads.

Standard library only. Start with `RULES` (every rule, its statement, its predicates) and `Monitor`.
One module is the exception and is not imported here: `stallfree.testing.machine`, the Hypothesis state
machine, needs hypothesis (the `dev` or `conform` extra).
"""

from . import invariants
from .capability import CANCEL, CAPABILITIES, STOP, Unsupported, supports
from .errors import FieldTypeError, InvalidField, ProtocolError, RuleViolation
from .facts import PROTOCOL, StepFacts
from .monitor import Monitor, refusal
from .play import Player, RunStats, play, work_bound
from .rules import BY_ID, RULE_IDS, RULES, Kind, Rule, of_kind, select
from .shadow import Ending, Reason, Shadow, Track
from .types import MAX_INT, Config, Entry, Plan, Request, admissible, check_int
from .workload import Arrival, Cancel, Workload

__all__ = [
    "BY_ID",
    "CANCEL",
    "CAPABILITIES",
    "MAX_INT",
    "PROTOCOL",
    "RULES",
    "RULE_IDS",
    "STOP",
    "Arrival",
    "Cancel",
    "Config",
    "Ending",
    "Entry",
    "FieldTypeError",
    "InvalidField",
    "Kind",
    "Monitor",
    "Plan",
    "Player",
    "ProtocolError",
    "Reason",
    "Request",
    "Rule",
    "RuleViolation",
    "RunStats",
    "Shadow",
    "StepFacts",
    "Track",
    "Unsupported",
    "Workload",
    "admissible",
    "check_int",
    "invariants",
    "of_kind",
    "play",
    "refusal",
    "select",
    "supports",
    "work_bound",
]
