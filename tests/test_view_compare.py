"""`stallfree trace --compare A,B,...`: the policies run on one workload, each whole (broken rules left
unchecked once found) and judged under its own contract; the running worst gap between two tokens and
the worst time to first token as the runs' own token steps give them; one PNG and one offline HTML
page with every run, a shared slider and a play button."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec import RULE_IDS
from stallfree.spec.examples import HAND_TRACE
from stallfree.variants import PrefillFirst, StaticBatching
from stallfree.view import record
from stallfree.view.compare import running_worst_gap, running_worst_gap_ms, token_steps, worst_ttft

WORKLOAD = ["--kv", "64", "--request", "0:8:6", "--request", "1:20:3@1", "--request", "2:4:3@2"]
COMPARE = ["trace", "--compare", "static,reference,prefill-first", *WORKLOAD]


def brute_worst_gap(steps: dict[int, list[int]], upto: int) -> int:
    """The worst gap over every pair of consecutive tokens whose second is at or before `upto`."""
    return max((b - a for s in steps.values() for a, b in itertools.pairwise(s) if b <= upto), default=0)


@pytest.mark.parametrize("factory", [Scheduler, PrefillFirst, StaticBatching], ids=["reference", "prefill-first",
                                                                                    "static"])
def test_the_running_worst_gap_is_the_worst_pair_so_far(factory: object) -> None:
    recording = record(HAND_TRACE, factory, [r for r in RULE_IDS if r != "DECODE-FIRST"])  # type: ignore[arg-type]
    steps = token_steps(recording)
    gaps = running_worst_gap(recording)
    assert gaps == [brute_worst_gap(steps, i) for i in range(len(recording.shown_steps))]
    assert gaps == sorted(gaps)  # a running worst never goes down


def test_the_gap_tells_the_policies_apart() -> None:
    """A stall is a gap over one step: the reference never has one, prefill-first has one on the hand
    trace (r0 waits behind r1's prompt), and so the measure can fail."""
    unchecked = [r for r in RULE_IDS if r != "DECODE-FIRST"]
    assert running_worst_gap(record(HAND_TRACE, Scheduler))[-1] == 1
    assert running_worst_gap(record(HAND_TRACE, PrefillFirst, unchecked))[-1] > 1


def test_the_gap_in_ms_adds_the_steps_between_the_tokens() -> None:
    recording = record(HAND_TRACE, PrefillFirst, [r for r in RULE_IDS if r != "DECODE-FIRST"])
    ms = [float(10 + i) for i in range(len(recording.shown_steps))]  # step i takes 10 + i ms
    steps = token_steps(recording)
    by_hand = max(sum(ms[a + 1:b + 1]) for s in steps.values() for a, b in itertools.pairwise(s))
    assert running_worst_gap_ms(recording, ms)[-1] == by_hand


def test_static_batching_makes_a_late_request_wait() -> None:
    """Static batching keeps every stream decoding (gap 1) and pays in time to first token."""
    static, reference = record(HAND_TRACE, StaticBatching, []), record(HAND_TRACE, Scheduler)
    assert running_worst_gap(static)[-1] == 1
    assert worst_ttft(static) > worst_ttft(reference)  # type: ignore[operator]


def test_compare_prints_each_policy_under_its_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(COMPARE) == 1  # prefill-first breaks DECODE-FIRST
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in out[2:]}
    assert re.search(r"static +static +14 +10 step\(s\) +1 step\(s\) +none", rows["static"])
    assert re.search(r"reference +reference +7 +3 step\(s\) +1 step\(s\) +none", rows["reference"])
    assert re.search(r"prefill-first +reference +9 +3 step\(s\) +4 step\(s\) +DECODE-FIRST at step 1",
                     rows["prefill-first"])


def test_compare_under_the_references_contract_names_what_static_breaks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--compare", "static,reference", "--contract", "reference", *WORKLOAD]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^static +reference .*WORK-CONSERVING at step 1$", out, flags=re.M)


def test_compare_writes_one_png_and_one_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matplotlib.image import imread

    png, page = tmp_path / "cmp.png", tmp_path / "cmp.html"
    assert main([*COMPARE, "--ms", "--plot", str(png), "--html", str(page)]) == 1
    out = capsys.readouterr().out
    assert f"plot: {png}" in out and f"html: {page}" in out
    assert imread(str(png)).shape[0] > 400
    text = page.read_text()
    assert 'id="play"' in text and 'id="slider"' in text and "http" not in text.replace(
        "http://www.w3.org/2000/svg", "")  # offline: nothing fetched
    payload = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S).group(1))
    names = [r["name"] for r in payload["runs"]]
    assert names == ["static", "reference", "prefill-first"]
    by_name = {r["name"]: r for r in payload["runs"]}
    assert by_name["prefill-first"]["gaps"][-1] == 4 and by_name["reference"]["gaps"][-1] == 1
    assert len(by_name["static"]["gaps_ms"]) == len(by_name["static"]["steps"]) == 14


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--compare", "reference"], "expected 2 to 8 different schedulers"),
        (["--compare", "reference,reference"], "expected 2 to 8 different schedulers"),
        (["--compare", "reference,static", "--scheduler", "static"], "--scheduler"),
        (["--compare", "reference,nosuch:Thing"], "nosuch"),
        (["--compare", "reference,paged"], "reservation design"),
    ],
)
def test_compare_refuses_what_it_cannot_draw(extra: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["trace", *WORKLOAD, *extra])
    except SystemExit as done:  # argparse refuses a bad --compare
        code = done.code  # type: ignore[assignment]
    assert code == 2
    assert message in capsys.readouterr().err
