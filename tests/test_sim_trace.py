"""The shipped Azure 2023 traces, their attribution, and the loader's errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from stallfree.sim.trace import DATA, SHIPPED, TraceError, load

SHIPPED_COUNTS = {"code": 8_819, "conv": 19_366}


@pytest.mark.parametrize("name", sorted(SHIPPED_COUNTS))
def test_shipped_trace_loads_whole(name: str) -> None:
    trace = load(name)
    assert len(trace.requests) == SHIPPED_COUNTS[name]
    arrivals = [r.arrival for r in trace.requests]
    assert arrivals[0] == 0.0
    assert arrivals == sorted(arrivals)
    assert 3000 < trace.duration < 3600  # about an hour of traffic
    assert sorted(r.rid for r in trace.requests) == list(range(SHIPPED_COUNTS[name]))
    assert min(r.prompt_len for r in trace.requests) >= 1
    assert min(r.max_new for r in trace.requests) >= 1


def test_first_rows_parse_to_the_millisecond() -> None:
    first = load("code").requests[:3]
    assert [(r.prompt_len, r.max_new) for r in first] == [(4808, 10), (3180, 8), (110, 27)]
    assert first[1].arrival == pytest.approx(0.052, abs=1e-9)


def test_attribution_and_licence_ship_beside_the_data() -> None:
    readme = (DATA / "README.md").read_text()
    licence = (DATA / "LICENSE.md").read_text()
    assert "Splitwise" in readme and "CC BY 4.0" in readme
    assert "creativecommons.org/licenses/by/4.0" in licence
    assert set(SHIPPED.values()) <= set(DATA.glob("*.csv"))


def test_pyproject_ships_the_data_as_package_data() -> None:
    import tomllib

    tools = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "stallfree.sim.data" in tools["packages"]
    assert tools["package-data"]["stallfree.sim.data"] == ["*.csv", "*.md"]


def test_rate_scale_divides_arrivals() -> None:
    trace = load("conv").head(50)
    faster = trace.scaled(4)
    assert [r.arrival * 4 for r in faster.requests] == pytest.approx([r.arrival for r in trace.requests])
    assert [r.prompt_len for r in faster.requests] == [r.prompt_len for r in trace.requests]
    with pytest.raises(ValueError, match="rate_scale must be > 0, got 0"):
        trace.scaled(0)


def test_plain_csv_loads_in_arrival_order(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("arrival_s,prompt_len,max_new\n2.5,100,3\n1.0,20,1\n")
    trace = load(path)
    assert [(r.rid, r.arrival, r.prompt_len, r.max_new) for r in trace.requests] == [(1, 0.0, 20, 1), (0, 1.5, 100, 3)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("when,a,b\n1,2,3\n", "header ['when', 'a', 'b']"),
        ("arrival_s,prompt_len,max_new\n0,12x,3\n", "data row 0: prompt_len '12x' is not an int"),
        ("arrival_s,prompt_len,max_new\n0,1,1\nsoon,1,1\n", "data row 1: arrival_s 'soon' is not a time"),
        ("arrival_s,prompt_len,max_new\n0,1\n", "data row 0: expected 3 fields, got 2"),
    ],
)
def test_bad_trace_files_name_row_field_and_value(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TraceError) as error:
        load(path)
    assert message in str(error.value)


def test_unknown_trace_names_itself() -> None:
    with pytest.raises(TraceError, match="'chat' is neither code nor conv nor a file"):
        load("chat")
