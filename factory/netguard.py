"""The socket guard of the stages that must never talk to the network (translate).

Argos and its helpers (minisbd, spaCy model download) try the network in a few places when
something is missing; under `no_network` they fail at once instead of sending anything.
`network_allowed` lifts the guard for the one explicitly requested download (--download)."""

from __future__ import annotations

import socket
from contextlib import contextmanager
from typing import Iterable, Iterator


class NetworkBlocked(OSError):
    """Raised by the socket guard: this stage never talks to the network."""


@contextmanager
def no_network(allow: bool = False, allow_hosts: Iterable[str] = ()) -> Iterator[None]:
    """Refuse every outgoing connection (and name lookup) while the block runs, but those to
    `allow_hosts` (the stage's own Dask cluster: 127.0.0.1 for the local one, see scaleout.py)."""
    if allow:
        yield
        return
    saved = _socket_functions()
    _GUARDS.append(saved)
    hosts = frozenset(allow_hosts)
    if hosts:
        _set_socket_functions(_only_to(hosts, saved))
    else:
        _set_socket_functions((_refuse, _refuse, _refuse, _refuse))
    try:
        yield
    finally:
        _GUARDS.pop()
        _set_socket_functions(saved)


_GUARDS: list[tuple] = []  # socket functions active before each guard (innermost last)


def _refuse(*_args, **_kwargs):
    raise NetworkBlocked("network access is disabled in the translate stage (deid_factory)")


def _only_to(hosts: frozenset[str], real: tuple) -> tuple:
    """Socket functions that pass calls for `hosts` to `real` and refuse all others."""
    connect, connect_ex, getaddrinfo, create_connection = real

    def allowed(address) -> bool:
        return isinstance(address, tuple) and bool(address) and address[0] in hosts

    def guarded_connect(sock, address):
        return connect(sock, address) if allowed(address) else _refuse()

    def guarded_connect_ex(sock, address):
        return connect_ex(sock, address) if allowed(address) else _refuse()

    def guarded_getaddrinfo(host, *args, **kwargs):
        return getaddrinfo(host, *args, **kwargs) if host in hosts else _refuse()

    def guarded_create_connection(address, *args, **kwargs):
        return create_connection(address, *args, **kwargs) if allowed(address) else _refuse()

    return guarded_connect, guarded_connect_ex, guarded_getaddrinfo, guarded_create_connection


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

