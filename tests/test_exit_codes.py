"""The exit-code table and its precedence (2 > 3 > 1 > 0)."""

from __future__ import annotations

import itertools

import pytest

from spanchor_core.exit_codes import ExitCode, combine_exit_codes


def test_numbers_are_the_documented_ones() -> None:
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("codes", "expected"),
    [((), 0), ((0,), 0), ((0, 1), 1), ((1, 3), 3), ((3, 1, 0), 3), ((3, 2), 2), ((2, 0, 1, 3), 2)],
)
def test_precedence(codes: tuple[int, ...], expected: int) -> None:
    assert combine_exit_codes(*codes) == expected


def test_order_never_matters() -> None:
    for codes in itertools.product(range(4), repeat=3):
        results = {combine_exit_codes(*perm) for perm in itertools.permutations(codes)}
        assert len(results) == 1


def test_unknown_code_is_refused() -> None:
    with pytest.raises(ValueError, match="7"):
        combine_exit_codes(7)
