"""The socket guard of the stages that must never talk to the network (translate).

Argos and its helpers (minisbd, spaCy model download) try the network in a few places when
something is missing; under `no_network` they fail at once instead of sending anything.
`network_allowed` lifts the guard for the one explicitly requested download (--download)."""

from __future__ import annotations

import socket
from contextlib import contextmanager
from typing import Iterator


class NetworkBlocked(OSError):
    """Raised by the socket guard: this stage never talks to the network."""


@contextmanager
def no_network(allow: bool = False) -> Iterator[None]:
    """Refuse every outgoing connection (and name lookup) while the block runs."""
    if allow:
        yield
        return
    saved = _socket_functions()
    _GUARDS.append(saved)
    _set_socket_functions((_refuse, _refuse, _refuse, _refuse))
    try:
        yield
    finally:
        _GUARDS.pop()
        _set_socket_functions(saved)


_GUARDS: list[tuple] = []  # socket functions active before each guard (innermost last)


def _refuse(*_args, **_kwargs):
    raise NetworkBlocked("network access is disabled in the translate stage (deid_factory)")


def _socket_functions() -> tuple:
    return (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo, socket.create_connection)


def _set_socket_functions(funcs: tuple) -> None:
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo, socket.create_connection = funcs  # type: ignore[method-assign]


@contextmanager
def network_allowed() -> Iterator[None]:
    """Lift the innermost guard for an explicitly requested download (--download), then restore it."""
    if not _GUARDS:
        yield
        return
    current = _socket_functions()
    _set_socket_functions(_GUARDS[-1])
    try:
        yield
    finally:
        _set_socket_functions(current)

