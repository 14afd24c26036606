"""Many instances of a frozen dataclass with slots made at once, their fields set through
the slots' own C setters: a frozen dataclass's ``__init__`` sets each field with
``object.__setattr__`` from Python (about 3 us for a five-field object), which is seconds for
the 100,000 rows of a comparison or the results of the queries its diagnosis builds. The
objects are the same as the constructor's (same field values; nothing else is run, so this
is only for classes without ``__post_init__``, which :func:`slot_setters` checks)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any, Final, TypeVar

__all__ = ["Setter", "fill", "fill_one", "slot_setters"]

_T = TypeVar("_T")
Setter = Callable[[Any, Any], None]
_NEW: Final = object.__new__
_EXHAUST: Final = deque[object](maxlen=0).extend


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Setter, ...]:
    """The setter of each field of ``cls`` (a frozen dataclass with slots and no
    ``__post_init__``), every field named, in the order of ``names``."""
    fields = {f.name for f in dataclasses.fields(cls)}
    if (
        set(names) != fields
        or len(names) != len(fields)
        or hasattr(cls, "__post_init__")
        or "__slots__" not in vars(cls)
    ):
        raise TypeError(f"{cls.__name__} is not a plain frozen dataclass with slots")
    return tuple(getattr(cls, name).__set__ for name in names)


def fill(
    cls: type[_T], setters: Sequence[Setter], columns: Sequence[Iterable[Any]], n: int
) -> list[_T]:
    """``n`` new instances of ``cls``, field ``i`` of the ``k``-th one the ``k``-th value of
    ``columns[i]`` (each column holding at least ``n`` values) set by ``setters[i]``."""
    made: list[_T] = list(map(_NEW, repeat(cls, n)))
    if len(setters) != len(columns):
        raise ValueError(f"{len(columns)} columns for {len(setters)} fields")
    for setter, column in zip(setters, columns, strict=True):
        _EXHAUST(map(setter, made, column))
    return made


def fill_one(cls: type[_T], setters: Sequence[Setter], values: Sequence[Any]) -> _T:
    """One new instance of ``cls``, field ``i`` set to ``values[i]`` by ``setters[i]``."""
    made: _T = _NEW(cls)
    for setter, value in zip(setters, values, strict=True):
        setter(made, value)
    return made
