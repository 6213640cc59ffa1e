"""The HTML step view: one self-contained page (no address outside it, no external script or
style), a step slider, and the data it draws equal to the recorded run."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from stallfree.commands.trace import HAND_TRACE
from stallfree.faults import FAULTS
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.view import record
from stallfree.view.grid import category
from stallfree.view.html import data, page

SVG_NAMESPACE = "http://www.w3.org/2000/svg"  # an XML name the script passes to createElementNS, not fetched


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = dict(attrs).get("id")

    def handle_data(self, text: str) -> None:
        if self._in is not None:
            self.text[self._in] = self.text.get(self._in, "") + text

    def handle_endtag(self, tag: str) -> None:
        self._in = None


def parsed(text: str) -> Elements:
    parser = Elements()
    parser.feed(text)
    return parser


def test_page_is_self_contained() -> None:
    text = page(record(HAND_TRACE, Scheduler), None)
    html = parsed(text)
    for tag, attrs in html.tags:
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
        assert tag not in {"link", "iframe", "img", "object", "embed"}, tag
    addresses = set(re.findall(r"\b(?:https?|ftp|wss?):/*[^\s\"'<>)]*", text))
    assert addresses <= {SVG_NAMESPACE}, addresses
    assert "@import" not in text and "url(" not in text and "fetch(" not in text and "XMLHttpRequest" not in text


def test_page_has_a_step_slider_and_the_three_panels() -> None:
    html = parsed(page(record(HAND_TRACE, Scheduler)))
    ids = {attrs.get("id"): (tag, attrs) for tag, attrs in html.tags}
    assert ids["slider"][0] == "input" and ids["slider"][1]["type"] == "range"
    assert {"tokens", "grid", "kv"} <= {i for i, (tag, _) in ids.items() if tag == "svg"}
    assert ids["data"][1]["type"] == "application/json" and "detail" in ids


def test_page_data_is_the_recorded_run() -> None:
    rec = record(HAND_TRACE, Scheduler)
    html = parsed(page(rec))
    shown = json.loads(html.text["data"])
    assert shown == json.loads(json.dumps(data(rec)))
    assert [s["num_tokens"] for s in shown["steps"]] == [8, 8, 8, 7, 2, 2]
    assert shown["steps"][3]["entries"][1]["text"] == "r1 chunk 14-20"
    assert shown["grid"]["1"] == [None, "admission", "chunk", "chunk", "decode", "decode"]
    assert shown["broken"] == []


def test_page_marks_the_broken_rule_and_its_unrun_plan() -> None:
    rec = record(HAND_TRACE, FAULTS["DECODE-FIRST"])
    shown = data(rec)
    assert [b["rule"] for b in shown["broken"]] == ["DECODE-FIRST"]
    last = shown["steps"][-1]
    assert last["step"] == rec.violation.step and last["completed"] is False  # type: ignore[union-attr]
    assert "ready-idle" in {category(c) for c in rec.shown_steps[-1].cells}


def test_text_in_the_data_cannot_close_the_script() -> None:
    rec = record(HAND_TRACE, Scheduler, scheduler="</script><script>alert(1)</script>")
    text = page(rec)
    assert text.count("</script>") == 2  # the data's and the drawing script's own
    assert json.loads(parsed(text).text["data"])["scheduler"] == rec.scheduler


def test_trace_html_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "hand.html"
    assert main(["trace", "--example", "hand", "--ms", "--html", str(out)]) == 0
    assert f"html: {out}" in capsys.readouterr().out
    steps = json.loads(parsed(out.read_text()).text["data"])["steps"]
    assert len(steps) == 6 and all(isinstance(s["ms"], float) for s in steps)


def test_trace_html_into_a_missing_folder_is_refused_before_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "--example", "hand", "--html", "/nonexistent-folder/x.html"]) == 2
    err = capsys.readouterr()
    assert "--html '/nonexistent-folder/x.html': directory /nonexistent-folder does not exist" in err.err
    assert "step" not in err.out


def test_keep_going_marks_every_broken_rule_in_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "unchunked.html"
    assert main(["trace", "--scheduler", "unchunked", "--kv", "64", "--request", "0:8:6", "--request", "1:20:3@1",
                 "--keep-going", "--html", str(out)]) == 1
    capsys.readouterr()
    shown = json.loads(parsed(out.read_text()).text["data"])
    assert [(b["rule"], b["step"]) for b in shown["broken"]] == [("BUDGET", 1), ("DECODE-FIRST", 1)]
    assert all(s["completed"] for s in shown["steps"])  # the last run, with both rules unchecked, ran to the end
