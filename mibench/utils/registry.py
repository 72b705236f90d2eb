"""One small registry pattern shared by tasks, estimators, critics and MI back-ends.

An entry is a name, a one-line description and an object (a factory or a spec).  Families of
names (``smile-<tau>``) register a *pattern*: a regular expression plus a factory that builds the
entry from the match.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, TypeVar

from mibench.errors import MibenchError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    description: str
    obj: T


#: an unknown name's error lists the choices up to this many; beyond, it points to ``mibench list``
MAX_LISTED = 40


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self._aliases: dict[str, str] = {}
        self._patterns: list[tuple[re.Pattern, str, Callable[[re.Match], Entry[T]]]] = []

    def register(self, name: str, description: str, *, aliases: tuple[str, ...] = ()):
        """Decorator: ``@REGISTRY.register("name", "one line")``."""

        def deco(obj: T) -> T:
            self.add(name, description, obj, aliases=aliases)
            return obj

        return deco

    def add(self, name: str, description: str, obj: T, *, aliases: tuple[str, ...] = ()) -> None:
        key = name.lower()
        if key in self._entries or key in self._aliases:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._entries[key] = Entry(name, description, obj)
        for alias in aliases:
            self._aliases[alias.lower()] = key

    def replace(self, name: str, description: str, obj: T) -> None:
        """Register ``name`` anew, replacing an entry of that name (never an alias of another)."""
        key = name.lower()
        if key in self._aliases:
            raise MibenchError(f"{name!r} is an alias of the {self.kind} {self._aliases[key]!r}; choose another name")
        self._entries.pop(key, None)
        self.add(name, description, obj)

    def is_alias(self, name: str) -> bool:
        return str(name).strip().lower() in self._aliases

    def matches_pattern(self, name: str) -> str | None:
        """The help name of the family ``name`` belongs to (``smile-<tau>``), else None."""
        return next((h for rx, h, _ in self._patterns if rx.fullmatch(str(name).strip())), None)

    def has_entry(self, name: str) -> bool:
        """``name`` is a registered entry (not an alias, not a pattern)."""
        return str(name).strip().lower() in self._entries

    def add_pattern(self, pattern: str, help_name: str, factory: Callable[[re.Match], Entry[T]]) -> None:
        """Names matching ``pattern`` (full match) are built by ``factory(match)``."""
        self._patterns.append((re.compile(pattern, re.IGNORECASE), help_name, factory))

    def get(self, name: str) -> Entry[T]:
        key = str(name).strip().lower()
        key = self._aliases.get(key, key)
        if key in self._entries:
            return self._entries[key]
        for rx, _, factory in self._patterns:
            m = rx.fullmatch(str(name).strip())  # patterns ignore case; the match keeps it (file paths)
            if m:
                return factory(m)
        choices = self.names() + [h for _, h, _ in self._patterns]
        close = difflib.get_close_matches(key, choices + list(self._aliases), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if len(choices) > MAX_LISTED:      # the task registry's hundred names made one unreadable line
            raise MibenchError(f"unknown {self.kind} {name!r}{hint}; `mibench list` shows the {len(choices)} choices")
        raise MibenchError(f"unknown {self.kind} {name!r}{hint}; choose from: {', '.join(choices)}")

    def names(self) -> list[str]:
        return [e.name for e in self._entries.values()]

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self._entries.values())

    def __contains__(self, name: str) -> bool:
        try:
            self.get(name)
        except MibenchError:
            return False
        return True

    def patterns_help(self) -> list[str]:
        return [h for _, h, _ in self._patterns]
