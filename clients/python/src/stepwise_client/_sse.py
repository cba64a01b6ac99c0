"""Server-sent events, parsed from lines (the part of the format the
Stepwise server writes: `id`, `event`, `data`, comments)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Optional


@dataclass
class Message:
    """One event of the stream."""

    event: str
    data: str
    id: Optional[str]


class Parser:
    """Feeds lines, yields messages at each blank line."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list = []
        self._id: Optional[str] = None

    def feed(self, line: str) -> Optional[Message]:
        if line == "":
            if not self._data and not self._event:
                return None
            message = Message(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data, self._id = "", [], None
            return message
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None


def messages(lines: Iterable[str]) -> Iterator[Message]:
    """The messages of a stream of lines."""
    parser = Parser()
    for line in lines:
        message = parser.feed(line.rstrip("\r"))
        if message is not None:
            yield message
