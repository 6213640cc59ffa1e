"""The oracle's side of a user scheduler hosted in its own process (`host`): a factory whose schedulers
forward each protocol call over a pipe, with a watchdog on every call.

Whatever the target does, the oracle's process sees only one of these: the decoded value the call
returned; the target's exception, re-raised as an Exception of the same type name (its
KeyboardInterrupt or SystemExit too: a crash of the scheduler, not the user's Ctrl-C); `TargetDied`
when the host ended mid-call (a segfault, os._exit); `CallHung` when a call did not answer within the
timeout, however it was stuck (a Python loop, a disarmed SIGALRM, one long C call). The host is killed
then, and at exit, so no thread or child the target started outlives the command's verdict.
"""

from __future__ import annotations

import atexit
import builtins
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from stallfree.spec.utils.loader import FactoryError, TargetError, split_target

from .sandbox import next_line
from .timeouts import load_timeout

HOSTS: list[subprocess.Popen[bytes]] = []  # every host started, killed at exit
ATTRS = ("block_size", "watermark", "free_blocks", "cached")  # what the paged and prefix monitors read
VIEWS = ("waiting", "running")  # the lines they read, as requests with a rid


class HostedPlan(list):  # type: ignore[type-arg]
    """A paged or prefix plan from the host: its entries, and the fields the target's plan had
    (`preempted`, `cached`), each read once there; a field it lacked is absent here too."""


class CallHung(BaseException):
    """A call to the hosted scheduler did not answer within the timeout (a BaseException, as trace's
    own watchdog error, so no handler for the scheduler's errors takes it)."""


class TargetDied(Exception):
    """The host process ended during a call: the scheduler crashed the interpreter or exited."""


class Opaque:
    """A value the scheduler returned that is not plain data: its type's name and repr, nothing else."""

    def __init__(self, type_name: str, shown: str) -> None:
        self.type_name, self.shown = type_name, shown

    def __repr__(self) -> str:
        return self.shown


class OneShotPlan:
    """A plan the target returned as a one-shot iterator (a generator), unread: an iterator here too,
    of the target's type name, so the monitor judges it as it would in process (PROTOCOL)."""

    def __init__(self, shown: str) -> None:
        self.shown = shown

    def __iter__(self) -> OneShotPlan:
        return self

    def __next__(self) -> Any:
        raise StopIteration

    def __repr__(self) -> str:
        return self.shown


def one_shot(type_name: str, shown: str) -> OneShotPlan:
    return type(type_name, (OneShotPlan,), {"__module__": "scheduler"})(shown)  # type: ignore[no-any-return]


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return [decode(item) for item in data]
    if isinstance(data, dict):
        if "p" in data:  # a list of int tuples, sent as lists
            return [tuple(entry) for entry in data["p"]]
        if "t" in data:
            return tuple(decode(item) for item in data["t"])
        if "g" in data:
            return one_shot(*data["g"])
        return Opaque(*data["o"])
    return data


def raised(type_name: str, text: str, kind: str = "Exception") -> Exception:
    """The target's exception as an Exception of the same name, and of the same built-in kind (an
    InvalidField is a ValueError), so it reads and is judged as in process; a BaseException that is no
    Exception (its KeyboardInterrupt, SystemExit) becomes a plain Exception: the scheduler's crash."""
    base = getattr(builtins, kind, Exception)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    made = type(type_name, (base,), {"__module__": "scheduler", "__str__": _as_sent})
    return made(text)  # type: ignore[no-any-return]


def _as_sent(error: BaseException) -> str:
    """The text the target's exception had: a KeyError would quote it a second time."""
    return str(error.args[0]) if error.args else ""


def _kill_hosts() -> None:
    for proc in HOSTS:
        if proc.poll() is None:
            proc.kill()


atexit.register(_kill_hosts)


class Link:
    """One host process: start, send a request, receive its answer within a deadline, kill."""

    def __init__(self, target: str, flag: str, timeout: float, timeout_flag: str = "--timeout") -> None:
        split_target(target, flag)
        self.target, self.flag, self.timeout, self.timeout_flag = target, flag, timeout, timeout_flag
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""

    def start(self) -> str:
        """Start the host and import the target there; its design. Raises TargetError."""
        self.buffer = b""
        self.proc = subprocess.Popen([sys.executable, "-m", "stallfree.conformance.isolation.host"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=os.getcwd())
        HOSTS.append(self.proc)
        sys_path = [p if p else os.getcwd() for p in sys.path]
        reply = self.ask({"target": self.target, "flag": self.flag, "sys_path": sys_path},
                         f"importing {self.target}", load_timeout())
        if "ready" not in reply:
            self.kill()
            raise TargetError(reply["load_error"])
        return str(reply["design"])

    def ask(self, message: dict[str, Any], call: str, timeout: float | None = None) -> dict[str, Any]:
        if self.proc is None:
            raise TargetDied(f"the scheduler's process is gone (stopped after an earlier {call})")
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the host is gone; receive() sees the end of its output
        try:
            return self.receive(call, self.timeout if timeout is None else timeout)
        except BaseException:  # a hang, a death, or the user's Ctrl-C: the host goes with it
            self.kill()
            raise

    def receive(self, call: str, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            line, self.buffer = next_line(self.proc.stdout.fileno(), self.buffer, timeout)
        except EOFError:
            raise TargetDied(f"the scheduler's process ended during {call} ({self._ended()})") from None
        if line is None:
            raise CallHung(f"{call} did not return within {timeout:g} s ({self.timeout_flag}; stopped from outside)")
        return json.loads(line)  # type: ignore[no-any-return]

    def _ended(self) -> str:
        assert self.proc is not None
        return ended(self.proc)

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            reap(proc)


class RemoteScheduler:
    """The plain protocol, each call answered by the hosted scheduler."""

    def __init__(self, link: Link, made: dict[str, Any]) -> None:
        self._link = link
        self._has = set(made["has"])
        self.stallfree_capabilities = frozenset(made["capabilities"])
        self.stallfree_name = made["name"]

    def _call(self, name: str, label: str, *args: Any) -> Any:
        reply = self._link.ask({"op": name, "args": [_wire(a) for a in args]}, label)
        if "raised" in reply:
            raise raised(*reply["raised"])
        if "absent" in reply:
            raise AttributeError(args[0])
        if "rids" in reply:  # a waiting or running view: requests with a rid, nothing else of theirs
            return [SimpleNamespace(rid=decode(rid)) for rid in reply["rids"]]
        value = decode(reply["value"])
        if "fields" in reply and isinstance(value, list):  # a paged or prefix plan: its entries and fields
            value = HostedPlan(value)
            for field, data in reply["fields"].items():
                setattr(value, field, decode(data))
        return value

    def add(self, *args: Any) -> Any:
        return self._call("add", f"add({', '.join(map(repr, args))})", *args)

    def schedule(self) -> Any:
        return self._call("schedule", "schedule()")

    def complete(self, plan: object, *stopped: Any) -> Any:  # the host hands the target its own plan object
        return self._call("complete", "complete(plan)", *[list(s) for s in stopped])

    def cancel(self, rid: object) -> Any:
        return self._call("cancel", f"cancel({rid!r})", rid)

    def __getattr__(self, name: str) -> Any:
        if name == "set_budget" and name in self._has:
            return lambda budget: self._call("set_budget", f"set_budget({budget!r})", budget)
        if name in ATTRS or name in VIEWS:
            if self._link.proc is None:  # the host ended (a crash, a hang): nothing to show
                return None
            op = "view" if name in VIEWS else "attr"
            return self._call(op, f"reading {name}", name)
        raise AttributeError(name)

    @property
    def free_kv(self) -> Any:
        if self._link.proc is None:  # the host ended (a crash, a hang): nothing to show
            return None
        return self._call("free_kv", "reading free_kv")


def _wire(value: object) -> Any:
    """An argument as JSON data, its tuples (a prefix request's content pairs) marked as tuples."""
    if type(value) is tuple:
        return {"t": [_wire(v) for v in value]}
    return [_wire(v) for v in value] if type(value) is list else value


class HostedFactory:
    """A factory for `target` hosted in its own process: one host per process that calls it (a forked
    campaign worker starts its own), each call a fresh scheduler there. Picklable: the link stays behind."""

    def __init__(self, target: str, timeout: float, flag: str = "--scheduler", timeout_flag: str = "--timeout") -> None:
        self.target, self.timeout, self.flag, self.timeout_flag = target, timeout, flag, timeout_flag
        self._link: Link | None = None
        self._pid = 0
        self.design = self._started().start()  # the import fails or hangs here, before any run

    def _started(self) -> Link:
        if self._link is None or self._pid != os.getpid():
            self._link, self._pid = Link(self.target, self.flag, self.timeout, self.timeout_flag), os.getpid()
        return self._link

    def __call__(self, **config: int) -> RemoteScheduler:
        link = self._started()
        if link.proc is None:  # killed after a hang, or not started in this process yet
            link.start()
        made = link.ask({"op": "new", "config": config}, "calling the factory")
        if "factory_error" in made:
            raise FactoryError(made["factory_error"])
        return RemoteScheduler(link, made)

    def close(self) -> None:
        if self._link is not None and self._pid == os.getpid():
            self._link.kill()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_link": None, "_pid": 0}


def remote_factory(target: str, timeout: float, flag: str = "--scheduler") -> tuple[Callable[..., Any], str]:
    """A factory for `target` hosted in its own process, and the design it declares. Raises TargetError
    (the import failed or hung) before any run."""
    factory = HostedFactory(target, timeout, flag)
    return factory, factory.design


def ended(proc: subprocess.Popen[bytes]) -> str:
    """How a child process ended, once it has: the signal that killed it or its exit code."""
    code = proc.wait()
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"


def reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child if it still runs, wait for it, and close the pipes to it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
