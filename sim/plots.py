"""PNG plots (matplotlib, Agg): one run, a budget sweep, an overload sweep, the timeline.

matplotlib is an optional extra (`stallfree[plot]`), imported only here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .simulator import SimResult
from .summary import MS
from .timeline import Timeline

DPI = 120
POLICY_STYLE = {  # one look per policy in every figure
    "reference": {"color": "tab:blue", "marker": "o", "label": "reference (decodes first, chunked)"},
    "prefill-first": {"color": "tab:orange", "marker": "s", "label": "prefill-first, chunked"},
    "unchunked": {"color": "tab:red", "marker": "^", "label": "prefill-first, unchunked"},
}
LOG_LABELS = (1.0, 2.0, 5.0)
LOG_SPAN = 10  # a y-axis goes logarithmic when its lines span this factor or more
TIMELINE_STREAMS_SHOWN = 8
LEGEND_ROOM = 0.04  # share of the figure's height kept under the panels for a shared legend
TIMELINE_MARGIN = 0.15  # seconds shown before the long prompt arrives and after its first token


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _style(policy: str) -> dict[str, str]:
    return POLICY_STYLE.get(policy, {"label": policy})


def _cdf(ax: Any, values: Sequence[float], label: str) -> None:
    ordered = sorted(values)
    n = len(ordered)
    ax.step(ordered, [(i + 1) / n for i in range(n)], where="post", label=label)


def plot_run(result: SimResult, folder: Path) -> list[Path]:
    """Latency CDFs and budget use of one simulation."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    streams = result.streams
    fig, (ttft, tpot, use) = plt.subplots(1, 3, figsize=(15, 4.2))
    _cdf(ttft, [s.ttft * MS for s in streams if s.ttft is not None], "TTFT")
    ttft.set(xscale="log", xlabel="ms", ylabel="share of requests", title="time to first token")
    _plain_labels(ttft.xaxis, subs=(1.0,))  # spans several decades
    _cdf(tpot, [s.tpot * MS for s in streams if s.tpot is not None], "TPOT (mean per request)")
    _cdf(tpot, [s.max_gap * MS for s in streams if s.num_emitted >= 2], "worst gap between tokens")
    tpot.set(xscale="log", xlabel="ms", title="time per output token")
    _plain_labels(tpot.xaxis)
    tpot.legend()
    budget = result.config.token_budget
    use.hist([n / budget for n in result.step_tokens], bins=50, log=True)
    use.set(xlabel="tokens / budget", ylabel="steps", title="budget use per step")
    fig.suptitle(f"{result.trace}, {result.policy}, budget {budget}")
    return [_save(fig, folder / f"run-{_slug(result.trace)}-{_slug(result.policy)}-{budget}.png")]


def plot_budgets(rows: Iterable[dict[str, Any]], path: Path) -> Path:
    """TPOT p99, worst token gap and TTFT p50 against budget, one line per policy.
    `rows` are summaries in their JSON form (`Summary.to_json()`), so saved sweeps can be replotted."""
    plt = _pyplot()
    rows = list(rows)
    budgets = sorted({_budget(r) for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    panels = (("tpot", "p99", "TPOT p99 (mean per request)"), ("max_gap", "max", "worst gap between tokens (max)"),
              ("ttft", "p50", "TTFT p50"))
    for ax, (key, stat, title) in zip(axes, panels, strict=True):
        for policy in dict.fromkeys(r["policy"] for r in rows):
            mine = sorted((r for r in rows if r["policy"] == policy), key=_budget)
            ax.plot([_budget(r) for r in mine], [r["latency_s"][key][stat] * MS for r in mine], **_style(policy))
        ax.set(xscale="log", xlabel="token budget", title=title)
        ax.set_xticks(budgets, [f"{b:,}" for b in budgets])
        ax.xaxis.set_minor_locator(_no_ticks())
        _log_ms(ax)
    axes[0].legend()
    fig.suptitle(f"trace {rows[0]['trace']}: {rows[0]['cost']}")
    return _save(fig, path)


def plot_rates(rows: Iterable[dict[str, Any]], scales: Sequence[float], path: Path) -> Path:
    """Overload: TTFT, queueing and the worst token gap against the arrival-rate scale, one line per
    policy. `rows` in JSON form, in the order policy-major, scale-minor (as `sweep.rate_points`)."""
    plt = _pyplot()
    rows = list(rows)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    panels = (("ttft", "p50", "TTFT p50"), ("queueing", "p99", "queueing delay p99"),
              ("max_gap", "max", "worst gap between tokens (max)"))
    for ax, (key, stat, title) in zip(axes, panels, strict=True):
        for policy in dict.fromkeys(r["policy"] for r in rows):
            mine = [r for r in rows if r["policy"] == policy]
            ax.plot(list(scales)[: len(mine)], [r["latency_s"][key][stat] * MS for r in mine], **_style(policy))
        ax.set(xscale="log", xlabel="arrival rate (x the trace's)", title=title)
        ax.set_xticks(list(scales), [f"{s:g}x" for s in scales])
        ax.xaxis.set_minor_locator(_no_ticks())
        _log_ms(ax)
    axes[0].legend()
    first = rows[0]
    fig.suptitle(f"overload: {first['trace'].split(' x')[0]}, budget {_budget(first):,}; {first['cost']}")
    return _save(fig, path)


def _budget(row: dict[str, Any]) -> int:
    return int(row["config"]["token_budget"])


def _no_ticks() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def _log_ms(ax: Any) -> None:
    """Milliseconds on a log axis labelled at 1, 2, 5 x each power of ten, when the lines span a
    decade or more; on a linear axis from zero otherwise, where a log axis would show one label."""
    from matplotlib.ticker import FuncFormatter

    ys = [y for line in ax.get_lines() for y in line.get_ydata()]
    ax.set(ylabel="ms")
    if ys and max(ys) >= LOG_SPAN * min(ys):
        ax.set(yscale="log")
        _plain_labels(ax.yaxis)
    else:
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,g}"))
    ax.grid(alpha=0.3)


def _plain_labels(axis: Any, subs: tuple[float, ...] = LOG_LABELS) -> None:
    """Log-axis labels as plain numbers (20, not 2 x 10^1), at `subs` x each power of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,g}"))
    axis.set_minor_formatter(NullFormatter())


def _save(fig: Any, path: Path, rect: tuple[float, float, float, float] | None = None) -> Path:
    """Lay `fig` out (within `rect`, if given), write it to `path` (its folder made if missing), close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout(rect=rect)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_timeline(timelines: Sequence[Timeline], path: Path) -> Path:
    """Per policy: the prompt tokens and the decode tokens of each step, and the token times of a
    few streams, around one long prompt's arrival and first token."""
    plt = _pyplot()
    fig, axes = plt.subplots(3, len(timelines), figsize=(5.2 * len(timelines), 7.6), sharex="col",
                             squeeze=False, gridspec_kw={"height_ratios": (1.4, 1, 1.4)})
    for col, tl in enumerate(timelines):
        start, end = tl.arrival - TIMELINE_MARGIN, tl.first_token + TIMELINE_MARGIN
        steps = [s for s in tl.result.steps or () if s.start + s.seconds >= start and s.start <= end]
        prompt, decode, streams = axes[0][col], axes[1][col], axes[2][col]
        lefts = [s.start for s in steps]
        widths = [s.seconds for s in steps]
        bars = {"align": "edge", "edgecolor": "white", "linewidth": 0.4}
        prompt.bar(lefts, [s.num_prefill for s in steps], widths, color="tab:gray", **bars)
        prompt.axhline(tl.result.config.token_budget, color="black", lw=0.8, ls=":", label="budget")
        prompt.set(title=_style(tl.policy)["label"], ylabel="prompt tokens\nin the step")
        decode.bar(lefts, [s.num_decodes for s in steps], widths, color="tab:green", **bars)
        decode.set(ylabel="decode tokens\nin the step")
        shown = [s for s in tl.result.streams if s.request.rid != tl.long_rid][:TIMELINE_STREAMS_SHOWN]
        times = [[t for t in s.token_times or () if start <= t <= end] for s in shown]
        streams.eventplot(times, colors="tab:green", linelengths=0.7)
        streams.set(xlabel="seconds", ylabel="stream", yticks=[])
        for ax in (prompt, decode, streams):
            ax.axvline(tl.arrival, color="tab:purple", ls="--", lw=1, label="long prompt arrives")
            ax.axvline(tl.first_token, color="tab:purple", lw=1.5, label="its first token")
            ax.set_xlim(start, end)
        streams.set_title(f"token times of {len(shown)} streams; worst gap {tl.worst_gap * MS:.0f} ms", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    r = timelines[0].result
    fig.suptitle(f"a {r.streams[-1].prompt_len:,}-token prompt arrives amid {len(r.streams) - 1} decoding "
                 f"streams; budget {r.config.token_budget:,}; {r.roofline.mode} cost")
    return _save(fig, path, rect=(0, LEGEND_ROOM, 1, 1))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text)


def plot_caps(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Reserving for a max_new cap against the oracle (exact max_new), per trace: throughput relative
    to the oracle's, the share of reserved KV that is used, and the requests running at once."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for trace in sorted({r["trace"] for r in rows}):
        mine = [r for r in rows if r["trace"] == trace]
        oracle = next(r for r in mine if r["max_new_cap"] is None)
        capped = sorted((r for r in mine if r["max_new_cap"] is not None), key=lambda r: r["max_new_cap"])
        caps = [r["max_new_cap"] for r in capped]
        label = trace.split(" x")[0]
        axes[0].plot(caps, [r["output_tokens_per_s"] / oracle["output_tokens_per_s"] for r in capped],
                     marker="o", label=label)
        axes[1].plot(caps, [r["kv_use_of_reserved"] for r in capped], marker="o", label=f"{label}, cap")
        axes[1].axhline(oracle["kv_use_of_reserved"], linestyle=":", color=axes[1].lines[-1].get_color(),
                        label=f"{label}, oracle")
        axes[2].plot(caps, [r["running_mean"] for r in capped], marker="o", label=f"{label}, cap")
        axes[2].axhline(oracle["running_mean"], linestyle=":", color=axes[2].lines[-1].get_color(),
                        label=f"{label}, oracle")
    for threshold in (0.95, 0.90):
        axes[0].axhline(threshold, color="grey", linewidth=0.8, linestyle="--")
    titles = ("throughput / oracle's (exact max_new)", "KV used / KV reserved (mean over time)",
              "requests running at once (mean)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("max_new cap (tokens reserved per request)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylim(0, 1.05)
    axes[1].set_ylim(0, 1.05)
    return _save(fig, path)
