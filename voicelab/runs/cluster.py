"""Joining a Ray cluster, shared by `voicelab sweep --ray` and `voicelab run --ray`.

`joined(address, init_kwargs, echo)` is a context manager that yields the `ray` module once this process is a
driver of the cluster, and shuts Ray down on the way out. 'local' starts a private Ray instance (`init_kwargs`
are its ray.init arguments, e.g. num_cpus=2); anything else is a cluster address ('auto', 'host:port',
'ray://host:10001'). A `host:port` address is knocked on first, with a deadline, because ray.init retries an
unreachable one for minutes. Every failure to join is a ClusterError whose message is one line naming the
address. Nested `joined` blocks (a matrix of runs, each joining) share the outer block's connection: whoever
initialised Ray in this process (Ray's own process-wide state) is the one that shuts it down.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

RAY_CONNECT_DEADLINE_S = 30.0  # joining a cluster takes seconds; past this the address is wrong or down


class ClusterError(RuntimeError):
    """The cluster cannot be joined (no ray package, nothing answers, ray.init refused); one line."""


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a cluster address ('host:port' or 'ray://host:port'); None for 'local' and 'auto'."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


@contextmanager
def joined(address: str, init_kwargs: Mapping[str, Any] | None = None,
           echo: Callable[[str], None] | None = None) -> Iterator[Any]:
    """This process as a driver of the Ray cluster at `address` (module doc); yields the `ray` module."""
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs the 'ray' package (pip install ray)") from None
    if ray.is_initialized():  # an outer block (or the caller) joined already: it owns the connection
        yield ray
        return
    kwargs = dict(init_kwargs or {})
    if address != "local":
        kwargs["address"] = address
    kwargs.setdefault("include_dashboard", False)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # its C++ client logs every failed retry to stderr
    kwargs.setdefault("log_to_driver", False)
    # ray.init retries an unreachable address for minutes: knock on the port first, with a deadline. (ray.init
    # itself must run in the main thread: from another one its core worker takes the whole process down.)
    reach = host_port(address)
    if reach is not None:
        try:
            socket.create_connection(reach, timeout=RAY_CONNECT_DEADLINE_S).close()
        except OSError as exc:
            raise ClusterError(f"--ray {address}: no cluster answers there ({exc.strerror or exc})") from None
    try:
        ray.init(**kwargs)
    except Exception as exc:  # reported as one line
        first = str(exc).strip().splitlines()
        raise ClusterError(f"--ray {address}: cannot join the cluster: {first[0] if first else type(exc).__name__}") \
            from None
    if echo is not None:
        echo(f"joined Ray ({address})")
    try:
        yield ray
    finally:
        ray.shutdown()


def task_error(exc: BaseException) -> BaseException:
    """The task's own exception inside a RayTaskError (or the error itself: a worker that died, ...)."""
    return getattr(exc, "cause", None) or exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
