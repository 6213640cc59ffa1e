"""The guided path (docs/learn.md, docs/learn-proofs.md) runs as written: every command in its console
blocks is run, every line shown under it is printed (in order; a line `...` stands for lines left out,
a line ending in ` ...` for a printed line that starts with the rest, where a timing follows), its exit
code is the one shown (`[exit N]`, else 0), and every picture it writes into docs/img is the committed
one, byte for byte."""

from __future__ import annotations

import re
import runpy
import shlex
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from stallfree.main import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "docs" / "learn.md", ROOT / "docs" / "learn-proofs.md")
EXIT = re.compile(r"^\[exit (\d+)\]$")
OUTPUTS = (".png", ".html")


@dataclass(frozen=True)
class Block:
    command: str
    expected: list[str]
    exit_code: int


def blocks(text: str) -> list[Block]:
    found = []
    for body in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        lines = body.rstrip("\n").split("\n")
        assert lines[0].startswith("$ "), f"a console block starts with its command: {lines[0]!r}"
        code = 0
        if EXIT.match(lines[-1]):
            code = int(EXIT.match(lines[-1]).group(1))  # type: ignore[union-attr]
            lines = lines[:-1]
        found.append(Block(lines[0][2:], lines[1:], code))
    return found


BLOCKS = [b for page in PAGES for b in blocks(page.read_text())]
PREFIX = " ..."


def redirect(argv: list[str], tmp_path: Path) -> tuple[list[str], dict[Path, Path]]:
    """Output files and folders under docs/img are written into tmp_path instead: new -> committed."""
    written: dict[Path, Path] = {}
    out = []
    for i, arg in enumerate(argv):
        if arg.startswith("docs/img") and (arg.endswith(OUTPUTS) or argv[i - 1] == "--plot"):
            target = tmp_path / Path(arg).name if arg.endswith(OUTPUTS) else tmp_path
            written[target] = ROOT / arg
            out.append(str(target))
        elif arg.startswith("docs/examples/"):  # an input the page names from the repository's root
            out.append(str(ROOT / arg))
        else:
            out.append(arg)
    return out, written


def run(block: Block, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], dict[Path, Path]]:
    argv, written = redirect(shlex.split(block.command), tmp_path)
    if argv[0] == "stallfree":
        code = main(argv[1:])
        out = capsys.readouterr().out
    else:
        assert argv[0] == "python", f"a command is stallfree or python: {block.command!r}"
        code, out = python(argv[1:], capsys)
    for new, committed in written.items():  # the output names the files where the docs say they go
        out = out.replace(str(new), str(committed.relative_to(ROOT)))
    return code, out.splitlines(), written


def python(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`python -m MODULE ...` or `python FILE ...`, run in this process as Python would run it."""
    module = argv[1] if argv[0] == "-m" else None
    args = argv[2:] if module else argv[1:]
    saved = sys.argv
    sys.argv = [module or argv[0], *args]
    code = 0
    try:
        if module:
            with warnings.catch_warnings():  # run as __main__ though other tests imported it: that is the intent
                warnings.filterwarnings("ignore", message=".*found in sys.modules", category=RuntimeWarning)
                runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(str(ROOT / argv[0]), run_name="__main__")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.argv = saved
    return code, capsys.readouterr().out


def missing(expected: list[str], out: list[str]) -> str | None:
    """The first shown line not printed, in order (`...` matches any lines), or None."""
    at = 0
    for line in expected:
        if line == "...":
            continue
        if line.endswith(PREFIX):
            start = line[: -len(PREFIX)]
            found = next((i for i in range(at, len(out)) if out[i].startswith(start)), None)
        else:
            found = out.index(line, at) if line in out[at:] else None
        if found is None:
            return line
        at = found + 1
    return None


def test_learn_has_its_commands() -> None:
    commands = [b.command.split()[:2] for b in BLOCKS]
    for used in (["stallfree", "trace"], ["stallfree", "budget"], ["stallfree", "simulate"], ["stallfree", "prove"],
                 ["stallfree", "exercise"]):
        assert used in commands, used


@pytest.mark.parametrize("block", BLOCKS, ids=[b.command[:60] for b in BLOCKS])
def test_learn_block_prints_what_it_shows(block: Block, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, written = run(block, tmp_path, capsys)
    assert code == block.exit_code, "\n".join(out)
    line = missing(block.expected, out)
    assert line is None, f"docs/learn.md shows a line the command does not print (in that order): {line!r}"
    for new, committed in written.items():
        files = [new] if new.suffix else sorted(new.iterdir())
        for path in files:
            if path.suffix == ".png":
                shown = committed if new.suffix else committed / path.name
                assert path.read_bytes() == shown.read_bytes(), f"{shown} is not what the command draws now"


def test_a_line_not_printed_or_out_of_order_is_caught(capsys: pytest.CaptureFixture[str]) -> None:
    hand = next(b for b in BLOCKS if b.command == "stallfree trace --example hand")
    _, out, _ = run(hand, Path("."), capsys)
    assert missing(hand.expected, out) is None
    wrong = [line.replace("7/8", "8/8") for line in hand.expected]
    assert missing(wrong, out) is not None
    assert missing(list(reversed([line for line in hand.expected if line != "..."])), out) is not None
    assert missing([" step  arrived ..."], out) is None and missing([" step  entries ..."], out) is not None


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_learn_links_and_pictures_exist(page: Path) -> None:
    text = page.read_text()
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (page.parent / target).exists(), target
    for name in re.findall(r"`(docs/[\w./-]+|[a-z]+/[\w./-]+\.py)`", text):
        assert (ROOT / name).exists(), name


NUMBERS = {"twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17}


def test_the_rule_count_is_the_registrys() -> None:
    from stallfree.spec import RULES

    text = PAGES[0].read_text()
    (word,) = re.findall(r"(\w+) rules state this exactly", text)
    assert NUMBERS.get(word.lower()) == len(RULES), f"docs/learn.md says {word!r} rules; the registry has {len(RULES)}"


def test_the_install_line_names_the_extras_the_path_needs() -> None:
    """`.[plot,proofs]`: matplotlib for the pictures, z3 and CrossHair for the proofs; not torch (the
    executor) nor the dev tools, which nothing on the path runs."""
    import tomllib

    (extras,) = re.findall(r"pip install -e '\.\[([\w,]+)\]'", PAGES[0].read_text())
    named = set(extras.split(","))
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert named == {"plot", "proofs"} and named <= set(declared)


def test_the_model_check_on_the_path_runs_without_z3() -> None:
    """Section 10's `prove --methods model` with z3 and CrossHair absent (`.[plot]` alone): it prints what
    the page shows; `--methods z3` then says which extra is missing, in one line."""
    import subprocess

    block = next(b for b in BLOCKS if b.command.startswith("stallfree prove --methods model"))  # learn.md first
    hide = "import sys; sys.modules['z3'] = sys.modules['crosshair'] = None; from stallfree.main import main; "
    argv = shlex.split(block.command)[1:]
    done = subprocess.run([sys.executable, "-c", f"{hide}sys.exit(main({argv!r}))"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == block.exit_code, done.stderr
    assert missing(block.expected, done.stdout.splitlines()) is None, done.stdout
    z3 = [*argv[:2], "z3"]
    done = subprocess.run([sys.executable, "-c", f"{hide}sys.exit(main({z3!r}))"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    (line,) = done.stderr.splitlines()
    assert "--methods z3 needs z3" in line and "pip install 'stallfree[proofs]'" in line, line
