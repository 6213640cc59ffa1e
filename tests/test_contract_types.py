"""The contract's values refuse bad fields with an error naming the field and the value."""

from __future__ import annotations

import math

import pytest

from stallfree.spec import Config, FieldTypeError, InvalidField, Request, admissible

BAD_VALUES = [0, -1, 1.0, math.nan, True, False, "3", None, 10**30]


@pytest.mark.parametrize("field", ["token_budget", "max_seqs", "kv_tokens"])
@pytest.mark.parametrize("value", BAD_VALUES)
def test_config_refuses_bad_field(field: str, value: object) -> None:
    fields: dict[str, object] = {"token_budget": 8, "max_seqs": 4, "kv_tokens": 64, field: value}
    with pytest.raises((InvalidField, FieldTypeError)) as error:
        Config(**fields)  # type: ignore[arg-type]
    assert field in str(error.value)
    assert repr(value) in str(error.value) or str(value) in str(error.value)


@pytest.mark.parametrize("field", ["prompt_len", "max_new"])
@pytest.mark.parametrize("value", BAD_VALUES)
def test_request_refuses_bad_field(field: str, value: object) -> None:
    fields: dict[str, object] = {"rid": 1, "prompt_len": 5, "max_new": 3, field: value}
    with pytest.raises((ValueError, TypeError)) as error:
        Request(**fields)  # type: ignore[arg-type]
    assert field in str(error.value)


@pytest.mark.parametrize("value", [-1, 1.5, True, "a", None, 10**30])
def test_request_refuses_bad_rid(value: object) -> None:
    with pytest.raises((ValueError, TypeError)) as error:
        Request(value, 5, 3)  # type: ignore[arg-type]
    assert "rid" in str(error.value)


def test_rid_zero_is_a_valid_rid() -> None:
    assert Request(0, 1, 1).rid == 0


def test_NEVER_FIT_reservation_over_capacity_is_refused() -> None:
    config = Config(8, 4, 10)
    assert admissible(Request(1, 7, 3), config).reservation == 10  # exactly K fits
    with pytest.raises(InvalidField, match=r"7 \+ 4 = 11 exceeds kv_tokens=10"):
        admissible(Request(1, 7, 4), config)
