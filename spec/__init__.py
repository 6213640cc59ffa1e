"""The stallfree contract as executable code: types, rules (by ID), the monitor, workloads.

Standard library only. Start with `RULES` (every rule, its kind, its statement, its predicates) and
`Monitor`. The tools that test a scheduler against it (the state machine, campaigns, random workloads)
live in `stallfree.testing`; spec/ holds the contract alone.

The map, in the order of a TLA+ specification (shadow, facts, monitor, rules and invariants are the
reservation design's modules, in spec/reservation/; what a rule, an invariant and an ending are, in
every design, the kernel's: spec/rule.py, spec/invariant.py, spec/ending.py):

    CONSTANTS        types.Config: B (token_budget), S (max_seqs), K (kv_tokens)
    VARIABLES        shadow.Shadow: waiting, running (partial ones in prefilling), free_kv, finished;
                     one shadow.Track per accepted request
    TYPE INVARIANT   invariants.types (TYPES): every request in one place, its counters in range
    INIT             Shadow(config): nothing waiting or running, all K free
    NEXT             the three calls of the plain protocol: Monitor.add (Shadow.accept), Monitor.plan
                     and Monitor.complete (facts.observe, facts.observe_emitted, then facts.apply)
    PROPERTIES       rules.RULES: each step rule a predicate over (state, facts of the step); NEVER-FIT
                     over each add(); kinds input, safety, liveness, policy (rule.Kind)
    INVARIANTS       invariants.INVARIANTS: stated (TYPES, SLOTS, KV) and derived (READY-WITHIN-BUDGET,
                     ONE-PARTIAL) facts about a single state
    FAIRNESS         the executor keeps stepping (weak fairness of the step): play.play steps until
                     every accepted request has finished, within play.work_bound
    THEOREMS         what stallfree.proofs establishes of the reference: the model checker
                     (proofs.explicit), the Z3 theorems (proofs.smt), CrossHair contracts
                     (proofs.contracts); docs/proofs.md lists each with its bounds and assumptions
"""

from . import registry
from .capability import CANCEL, CAPABILITIES, STOP, Unsupported, supports
from .ending import Ending, Reason
from .errors import FieldTypeError, InvalidField, ProtocolError, RuleViolation
from .play import Player, RunStats, play, work_bound
from .reservation import invariants
from .reservation.facts import StepFacts
from .reservation.monitor import Monitor, refusal
from .reservation.rules import BY_ID, RULE_IDS, RULES, of_kind, select
from .reservation.shadow import Shadow, Track
from .rule import Kind, Rule
from .types import MAX_INT, Config, Entry, Plan, Request, admissible, check_int
from .verdict import PROTOCOL
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
    "registry",
    "select",
    "supports",
    "work_bound",
]
