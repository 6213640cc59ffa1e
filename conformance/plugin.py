"""The pytest plugin (entry point `pytest11`): one test per rule ID for a scheduler.

Either add one file to a scheduler's tests:

    from stallfree.conformance import conformance_tests
    test_mine = conformance_tests("pkg:Factory")          # or profile="safety", rules=[...], examples=N

or run `pytest --stallfree-target pkg:Factory [--stallfree-profile safety]`. Each rule gets a test named
after it (test_mine[BUDGET] ...; stallfree[BUDGET] ...), plus one named PROTOCOL for what no rule names
(protocol errors, crashes, hangs). A broken rule fails with its minimal counterexample; a rule outside
the claim is skipped as not checked, never passed. The target is explored once per session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from stallfree.spec import MAX_INT, PROTOCOL, RULE_IDS

TEST_IDS = (*RULE_IDS, PROTOCOL)
MAX_EXAMPLES = 100_000  # per config, as `stallfree conform --examples` takes


class Explored:
    """The report of one target, made on first use and kept: every rule's test reads the same run."""

    def __init__(self, target: str, **options: Any) -> None:
        self.target = target
        self.options = options
        self._report: Any = None
        self._error: str | None = None

    def report(self) -> Any:
        if self._report is None and self._error is None:
            from stallfree.spec.utils.loader import TargetError

            from .kit.check import conform

            try:
                self._report = conform(self.target, **self.options)
            except (TargetError, ValueError) as error:
                self._error = str(error)
        if self._error is not None:
            pytest.fail(f"stallfree conform {self.target}: {self._error}", pytrace=False)
        return self._report


def judge(explored: Explored, test_id: str) -> None:
    """Pass, fail with the counterexample, or skip as not checked, not applicable or not supported."""
    from .kit.check import FAIL, NOT_APPLICABLE, NOT_CHECKED, NOT_JUDGED, NOT_SUPPORTED
    from .kit.report import counterexample_lines

    report = explored.report()
    if test_id == PROTOCOL:
        problems = [c for r, c in report.counterexamples.items() if r not in report.verdicts]
        if problems:
            pytest.fail("\n".join(counterexample_lines(report.target, problems[0])), pytrace=False)
        return
    verdict = report.verdicts[test_id]
    if verdict == NOT_CHECKED:
        claim = f"profile {report.profile}" if report.profile else "the rules chosen"
        pytest.skip(f"{test_id} not checked: not in {claim}")
    if verdict == NOT_APPLICABLE:
        pytest.skip(f"{test_id} not applicable: {report.not_applicable[test_id]}")
    if verdict == NOT_SUPPORTED:
        pytest.skip(f"{test_id} not supported by the target: {'; '.join(report.skipped)}")
    if verdict == FAIL:
        pytest.fail("\n".join(counterexample_lines(report.target, report.counterexamples[test_id])), pytrace=False)
    if verdict == NOT_JUDGED:
        pytest.fail(f"{test_id} not judged: {report.ended_early} stopped the exploration (see the PROTOCOL test)",
                    pytrace=False)
    if test_id in report.partial:  # passed, on part of what the rule asks: said, never hidden
        import warnings

        warnings.warn(f"stallfree {test_id} passed partially: {report.partial[test_id]}", stacklevel=1)


def conformance_tests(
    target: str, *, profile: str | None = None, rules: Iterable[str] | None = None, **options: Any
) -> Callable[[str], None]:
    """A test function parametrized over the rule IDs (and PROTOCOL) checking `target` (MODULE:FACTORY).
    `options` go to `stallfree.conformance.kit.conform` (examples, seed, budget, max_seqs, kv_tokens,
    timeout, run_timeout, load_timeout; the last two default to STALLFREE_RUN_TIMEOUT and
    STALLFREE_LOAD_TIMEOUT when set)."""
    from stallfree.spec.utils.loader import split_target

    from .kit.profiles import checked_rules

    split_target(target)  # a bad target, profile or rule list is one error here, not one per rule's test
    checked_rules(None if rules is None else list(rules), profile)
    explored = Explored(target, profile=profile, rules=None if rules is None else list(rules), **options)

    @pytest.mark.parametrize("rule_id", TEST_IDS)
    def test_conformance(rule_id: str) -> None:
        judge(explored, rule_id)

    test_conformance.__doc__ = f"stallfree conformance of {target}, one test per rule ID"
    return test_conformance


# -- pytest --stallfree-target ---------------------------------------------------------------------------------


class RuleItem(pytest.Item):
    """One rule's verdict for the --stallfree-target scheduler."""

    def __init__(self, *, test_id: str, explored: Explored, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test_id = test_id
        self.explored = explored

    def runtest(self) -> None:
        judge(self.explored, self.test_id)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"stallfree conform {self.explored.target} [{self.test_id}]"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stallfree", "stallfree conformance kit")
    group.addoption("--stallfree-target", metavar="MODULE:FACTORY", default=None,
                    help="check this scheduler against the stallfree rules: one test per rule ID")
    group.addoption("--stallfree-profile", default=None, help="the part of the contract it claims: safety or full")
    group.addoption("--stallfree-examples", type=int, default=None, help="generated workloads per config")
    group.addoption("--stallfree-seed", type=int, default=0, help="seed of the workload generator")


def pytest_configure(config: pytest.Config) -> None:
    """Bad --stallfree-* options are one usage error before any test runs, not the same failure in each."""
    from stallfree.spec.utils.loader import TargetError, split_target

    from .kit.profiles import is_profile, profiles

    target = config.getoption("--stallfree-target", None)
    profile = config.getoption("--stallfree-profile", None)
    examples = config.getoption("--stallfree-examples", None)
    seed = config.getoption("--stallfree-seed", 0)
    if target is not None:
        try:
            split_target(target)
        except TargetError as error:
            raise pytest.UsageError(f"--stallfree-target: {error}") from None
    elif profile is not None or examples is not None:
        raise pytest.UsageError("--stallfree-profile and --stallfree-examples need --stallfree-target MODULE:FACTORY")
    if profile is not None and not is_profile(profile):
        raise pytest.UsageError(f"--stallfree-profile {profile!r} is unknown; the profiles are {', '.join(profiles())}")
    if examples is not None and not 1 <= examples <= MAX_EXAMPLES:
        raise pytest.UsageError(f"--stallfree-examples must be from 1 to {MAX_EXAMPLES:,}, got {examples}")
    if not 0 <= seed <= MAX_INT:
        raise pytest.UsageError(f"--stallfree-seed must be from 0 to 2**63-1, got {seed}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    target = config.getoption("--stallfree-target")
    if not target:
        return
    options: dict[str, Any] = {"profile": config.getoption("--stallfree-profile"),
                               "seed": config.getoption("--stallfree-seed")}
    if config.getoption("--stallfree-examples") is not None:
        options["examples"] = config.getoption("--stallfree-examples")
    explored = Explored(target, **options)
    for test_id in TEST_IDS:
        items.append(RuleItem.from_parent(session, name=f"stallfree[{test_id}]", test_id=test_id, explored=explored))
