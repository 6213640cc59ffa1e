"""Fuzzing the two file readers people hand hostile input to: `stallfree check-trace FILE.jsonl` and
`stallfree trace --workload FILE.json`. Each input is a valid seed (recorded traces of the reference
and of a faulty scheduler, workloads from the campaign generator) with one to three mutations: flipped
and non-UTF-8 bytes, cut and inserted text, deleted, doubled and swapped lines, numbers replaced by
boundary values, keys misspelt, values replaced by other JSON types, deep nesting, huge numbers.

Reports the exit statuses, the crashes (status 3, an exception out of main, or a traceback printed),
the hangs (an input not judged within --hang-seconds), and time per input. A refusal (status 2) must
print no verdict, and no rule may hold over no step. Exits 1 if any of these happened.

    python benchmarks/fuzz_inputs.py [--inputs N] [--seed S] [--hang-seconds T] [--save DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from stallfree.conformance.trace.record import record_trace
from stallfree.faults.catalog import FreeDecodes
from stallfree.main import main
from stallfree.reference import Scheduler
from stallfree.spec.utils.alarm import Alarm
from stallfree.testing.generate import random_workload

BOUNDARY = ("0", "-1", "1", "9223372036854775807", "9223372036854775808", "1e308", "1e999", "-0", "1.5",
            "NaN", "Infinity", '"7"', "null", "true", "[]", "{}", "1" * 5000)
VALUES = ("null", "true", "false", '"x"', "[]", "{}", "[[1,2]]", "[1,2,3]", '{"a": 1}', "0.5")
KEYS = ("step", "plan", "emitted", "finished", "add", "refuse", "end", "config", "token_budget", "max_seqs",
        "kv_tokens", "requests", "rid", "prompt_len", "max_new", "arrival_step", "stallfree_trace")
NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")
VERDICT = re.compile(r"^\S+\s+(holds|BROKEN|not judged|not checked)\b", re.M)
HOLDS_ON_NOTHING = re.compile(r"^\S+\s+holds \(0 steps\)", re.M)


class Hang(Exception):
    pass


def seeds(rng: random.Random) -> tuple[list[bytes], list[bytes]]:
    """Recorded traces (reference and FreeDecodes, which breaks BUDGET) and workloads, as bytes."""
    traces, workloads = [], []
    for i in range(12):
        workload = random_workload(rng)
        workloads.append(workload.dumps().encode())
        for factory in (Scheduler, FreeDecodes) if i % 3 == 0 else (Scheduler,):
            out = io.StringIO()
            record_trace(workload, factory, out)
            traces.append(out.getvalue().encode())
    return traces, workloads


def mutate(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(MUTATIONS)(data, rng)
    return data


def flip_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\xff"
    i = rng.randrange(len(data))
    return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]


def cut_span(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + data[i + rng.randint(1, 40):]


def insert_junk(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    junk = rng.choice((b",", b"]", b"[", b"}", b"{", b'"', b"\n", b"\x00", b"\xc3\x28", b"\xef\xbb\xbf", b" " * 100))
    return data[:i] + junk + data[i:]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def line_edit(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    kind = rng.randrange(3)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[j])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def boundary_number(data: bytes, rng: random.Random) -> bytes:
    found = list(NUMBER.finditer(data))
    if not found:
        return data
    m = rng.choice(found)
    return data[:m.start()] + rng.choice(BOUNDARY).encode() + data[m.end():]


def misspell_key(data: bytes, rng: random.Random) -> bytes:
    key = rng.choice(KEYS).encode()
    quoted = b'"' + key + b'"'
    if quoted not in data:
        return data
    typo = key[:-1] if len(key) > 2 and rng.random() < 0.5 else key + rng.choice((b"s", b"_", b"X"))
    return data.replace(quoted, b'"' + typo + b'"', 1)


def other_type(data: bytes, rng: random.Random) -> bytes:
    key = rng.choice(KEYS).encode()
    m = re.search(rb'"' + key + rb'":\s*', data)
    if m is None:
        return data
    end = m.end()
    value_end = end
    depth = 0
    while value_end < len(data):  # skip one JSON value (roughly): to the comma or brace at depth 0
        c = data[value_end:value_end + 1]
        if c in (b"[", b"{"):
            depth += 1
        elif c in (b"]", b"}"):
            if depth == 0:
                break
            depth -= 1
        elif c == b"," and depth == 0:
            break
        value_end += 1
    return data[:end] + rng.choice(VALUES).encode() + data[value_end:]


def deep_nesting(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice((100, 1000, 5000, 100_000))
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"[" * depth + b"]" * depth + data[i:]


MUTATIONS = (flip_byte, cut_span, insert_junk, truncate, line_edit, boundary_number, boundary_number, misspell_key,
             other_type, other_type, deep_nesting)


def judge(argv: list[str], hang_seconds: float) -> tuple[str, str, float, str]:
    """(outcome, exit status or crash kind, seconds, what was printed) of main(argv), in this process."""
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    try:
        with Alarm(hang_seconds, Hang), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
        outcome = str(status)
    except Hang:
        outcome = "hang"
    except SystemExit as exit_:
        outcome = str(exit_.code)
    except BaseException as error:  # anything out of main is a crash of stallfree
        outcome = f"raised {type(error).__name__}"
    seconds = time.perf_counter() - started
    printed = out.getvalue() + err.getvalue()
    if outcome == "3" or outcome.startswith("raised") or "Traceback" in printed:
        kind = "crash"
    elif outcome == "hang":
        kind = "hang"
    elif outcome == "2" and VERDICT.search(out.getvalue()):
        kind = "verdict on a refused input"
    elif HOLDS_ON_NOTHING.search(out.getvalue()):
        kind = "holds on no step"
    else:
        kind = "ok"
    return kind, outcome, seconds, printed


def fuzz(name: str, seeds: list[bytes], command: list[str], inputs: int, rng: random.Random, folder: Path,
         hang_seconds: float, save: Path | None) -> tuple[Counter[str], Counter[str], list[float]]:
    kinds: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    times = []
    path = folder / (name + (".jsonl" if name == "check-trace" else ".json"))
    for seed in seeds:  # the seeds themselves are judged, not refused
        path.write_bytes(seed)
        kind, status, _, printed = judge([*command, str(path)], hang_seconds)
        assert kind == "ok" and status in ("0", "1"), (name, status, printed[-2000:])
    for i in range(inputs):
        data = mutate(rng.choice(seeds), rng)
        path.write_bytes(data)
        kind, status, seconds, printed = judge([*command, str(path)], hang_seconds)
        kinds[kind] += 1
        statuses[status] += 1
        times.append(seconds)
        if kind != "ok" and save is not None:
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{name}-{i}.in").write_bytes(data)
            (save / f"{name}-{i}.out").write_text(f"{kind} {status}\n{printed[-5000:]}")
    return kinds, statuses, times


def main_(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", type=int, default=6000, help="mutated inputs per reader (default 6000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hang-seconds", type=float, default=20.0, help="an input not judged within this is a hang")
    p.add_argument("--save", type=Path, default=None, help="write each crashing or hanging input here")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    traces, workloads = seeds(rng)
    worst = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, corpus, command in (
            ("check-trace", traces, ["check-trace", "--quiet"]),
            ("workload", workloads, ["trace", "--quiet", "--workload"]),
        ):
            started = time.perf_counter()
            kinds, statuses, times = fuzz(name, corpus, command, args.inputs, rng, folder, args.hang_seconds,
                                          args.save)
            wall = time.perf_counter() - started
            bad = sum(n for kind, n in kinds.items() if kind != "ok")
            worst = max(worst, bad)
            print(f"{name}: {args.inputs:,} mutated inputs from {len(corpus)} seeds in {wall:.1f} s")
            print(f"  exit statuses  {dict(sorted(statuses.items()))}")
            print(f"  crashes        {kinds['crash']}")
            print(f"  hangs          {kinds['hang']} (none judged in under {args.hang_seconds:g} s)")
            print(f"  verdicts printed on a refused input  {kinds['verdict on a refused input']}")
            print(f"  holds over no step  {kinds['holds on no step']}")
            print(f"  seconds per input: median {statistics.median(times) * 1e3:.2f} ms, max {max(times):.2f} s")
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main_())
