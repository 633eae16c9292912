"""An implementation under test run as a command, kept on a short leash.

Whatever the command does, the kit's own process stays bounded and nothing of it outlives the kit:

* it runs in a session of its own (its own process group), with a token in its environment
  (``CODEMODE_IUT``) that its descendants inherit; :meth:`IUTProcess.kill` kills the group and then every
  process still carrying the token, so a child that left the group (``setsid``, a daemon) or kept stdout
  open goes too;
* stdout is read by a thread into complete lines, each at most ``MAX_LINE_BYTES``: a longer line is
  reported as :class:`Overlong` with its size and skipped as it arrives, never held; the lines waiting to
  be read are bounded in bytes (the reader stops reading, so the command blocks on a full pipe);
* stderr is drained by a thread that keeps only its last ``STDERR_KEEP`` bytes (a command that writes
  gigabytes there costs nothing);
* once it has started a command, the kit's process is a *child subreaper* (Linux
  ``PR_SET_CHILD_SUBREAPER``): a descendant whose parent exits is re-parented to the kit, not to init,
  so even one that cleared its environment and left every session of the implementation's is still the
  kit's to find. At exit the kit kills every such orphan (a child it did not start whose session is
  not the kit's own: the kit's own helpers, and whatever else the host program started, keep theirs),
  and every command it started (``atexit``).
"""

from __future__ import annotations

import atexit
import itertools
import os
import re
import secrets
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

#: the longest response line the kit reads (SPEC.md, Protocol): a js of 1 MiB written with \u escapes fits
MAX_LINE_BYTES = 8 << 20
#: bytes of complete lines the reader keeps waiting before it stops reading the command's stdout
MAX_WAITING_BYTES = 64 << 20
STDERR_KEEP = 16 << 10
TOKEN_VARIABLE = "CODEMODE_IUT"


class CannotStart(RuntimeError):
    """The IUT cannot be started or does not answer at all (a usage problem, exit status 2)."""


@dataclass(frozen=True, slots=True)
class Overlong:
    """A stdout line longer than ``MAX_LINE_BYTES`` (skipped, not kept)."""

    size: int


class _EOF:
    pass


EOF = _EOF()
Line = bytes | Overlong | _EOF

_LIVE: weakref.WeakSet[IUTProcess] = weakref.WeakSet()


class _Lines:
    """A queue of stdout lines, bounded in bytes: ``put`` waits while too much is unread."""

    def __init__(self) -> None:
        self._items: deque[Line] = deque()
        self._bytes = 0
        self._cond = threading.Condition()
        self.closed = False

    def put(self, item: Line) -> None:
        size = len(item) if isinstance(item, bytes) else 0
        with self._cond:
            while self._bytes + size > MAX_WAITING_BYTES and self._items and not self.closed:
                self._cond.wait(0.5)
            self._items.append(item)
            self._bytes += size
            self._cond.notify_all()

    def get(self, timeout: float | None) -> Line | None:
        """The next line, or ``None`` if none came within ``timeout`` seconds (``0``: do not wait)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            item = self._items.popleft()
            self._bytes -= len(item) if isinstance(item, bytes) else 0
            self._cond.notify_all()
            return item

    def unget(self, item: Line) -> None:
        with self._cond:
            self._items.appendleft(item)
            self._bytes += len(item) if isinstance(item, bytes) else 0

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


def exit_said(status: int) -> str:
    """How a command ended, in words: ``exited with status 3``, or ``was killed by SIGSEGV`` for a
    status Popen gives as minus the signal's number (a command run through ``exec`` is no shell's child
    that would have said 128 + the signal)."""
    if status >= 0:
        return f"exited with status {status}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    return f"was killed by {name}"


def shell_line(command: str) -> str:
    """What the shell is given to run ``command``: its last simple command run through ``exec`` where the
    command is a list of simple commands (``./planner``, ``MODEL=small ./planner``, ``cd dir && ./planner``:
    words and assignments joined by ``&&``, ``||`` or ``;``, no pipe, redirection, subshell or
    substitution) whose last command starts with no keyword or builtin, else the command as written.

    A shell that runs a command as its child (dash, the usual ``/bin/sh``, does) keeps its own copy of
    the command's stdout open for as long as the command runs, so an implementation that closes its stdout
    and keeps running would look silent (an answer overdue after the timeout), not closed. ``exec`` makes
    the last command the shell's own process: the kit sees what the implementation itself does with its
    pipes. Any other command (a pipeline, redirections) runs as written; its last process may be watched
    through the shell."""
    if "\n" in command or "`" in command or "$(" in command:
        return command
    tokens = _shell_tokens(command)
    if tokens is None or any(op and text not in _LIST_OPERATORS for op, text, _ in tokens):
        return command  # an unclosed quote (the shell says what is wrong), a pipe, a redirection, a subshell
    cut = max((k + 1 for k, (op, _, _) in enumerate(tokens) if op), default=0)
    rest = list(itertools.dropwhile(lambda t: _ASSIGNMENT.match(t[1]), tokens[cut:]))
    if not rest or rest[0][1] in _SHELL_WORDS:
        return command  # assignments alone, a keyword or a builtin; or no command (a comment alone)
    at = rest[0][2]
    return command[:at] + "exec " + command[at:]


#: what may join the simple commands of a line that is run with its last command through ``exec``
_LIST_OPERATORS = ("&&", "||", ";")

#: the characters of the shell's operators (an unquoted run of them is one operator)
_OPERATOR_CHARS = frozenset(";&|<>()")

#: a word that assigns a variable for the command after it (``MODEL=small``, ``OPTS="a b"``)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _shell_tokens(command: str) -> list[tuple[bool, str, int]] | None:
    """The words and operators of one line as the shell splits it: (is an operator, the text as written,
    where it starts), up to a comment; ``None`` for an unclosed quote. An operator is a run of unquoted
    ``;&|<>()``; quotes and backslashes are read as the shell reads them (a quoted ``;`` is part of a word)."""
    out: list[tuple[bool, str, int]] = []
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c.isspace():
            i += 1
        elif c in _OPERATOR_CHARS:
            j = i
            while j < n and command[j] in _OPERATOR_CHARS:
                j += 1
            out.append((True, command[i:j], i))
            i = j
        elif c == "#":
            break  # a comment, to the end of the line
        else:
            j = i
            while j < n and not command[j].isspace() and command[j] not in _OPERATOR_CHARS:
                if command[j] == "\\":
                    j += 2
                elif command[j] in "'\"":
                    quote = command[j]
                    j += 1
                    while j < n and command[j] != quote:
                        j += 2 if command[j] == "\\" and quote == '"' else 1
                    if j >= n:
                        return None
                    j += 1
                else:
                    j += 1
            out.append((False, command[i:j], i))
            i = j
    return out


#: words a simple command may not start with to be run through ``exec``: the shell's keywords and
#: builtins that must run in the shell itself (``exec cd dir`` is no command)
_SHELL_WORDS = frozenset((
    "exec", "if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done", "in",
    "{", "}", "!", "[[", "]]", "function", "select", "time", "cd", "export", "set", "unset", "alias", ".",
    "source", "eval", "exit", "return", "readonly", "trap", "wait", "ulimit", "umask", "shift", "local",
    "break", "continue",
))


class IUTProcess:
    """One run of ``command`` (with the shell) with its stdout as lines and the tail of its stderr."""

    def __init__(self, command: str, *, cwd: str | None = None) -> None:
        self.command = command
        self.token = secrets.token_hex(12)
        self.lines = _Lines()
        self._stderr = bytearray()
        self.stderr_total = 0
        self._lock = threading.Lock()
        env = dict(os.environ, **{TOKEN_VARIABLE: self.token})
        try:
            self.proc = subprocess.Popen(
                shell_line(command), shell=True, cwd=cwd, env=env, start_new_session=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except OSError as err:
            raise CannotStart(f"{command!r} could not be started: {err}") from err
        _LIVE.add(self)
        _STARTED.add(self.proc.pid)
        _adopt_orphans()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._read_stdout, args=(self.proc.stdout.fileno(),), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.proc.stderr.fileno(),), daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- reading ------------------------------------------------------------------------------------

    def _read_stdout(self, fd: int) -> None:
        buffer = bytearray()
        skipping = 0  # > 0: the size so far of an overlong line being skipped
        try:
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if end < 0:
                        rest = chunk[start:]
                        if skipping:
                            skipping += len(rest)
                        elif len(buffer) + len(rest) > MAX_LINE_BYTES:
                            skipping = len(buffer) + len(rest)
                            buffer.clear()
                        else:
                            buffer += rest
                        break
                    piece = chunk[start:end]
                    if skipping:
                        self.lines.put(Overlong(skipping + len(piece) + 1))
                        skipping = 0
                    elif len(buffer) + len(piece) > MAX_LINE_BYTES:
                        self.lines.put(Overlong(len(buffer) + len(piece) + 1))
                        buffer.clear()
                    else:
                        buffer += piece
                        self.lines.put(bytes(buffer))
                        buffer.clear()
                    start = end + 1
        except OSError:
            pass
        if skipping:
            self.lines.put(Overlong(skipping))
        elif buffer:
            self.lines.put(bytes(buffer))  # a last line without its newline
        self.lines.put(EOF)

    def _read_stderr(self, fd: int) -> None:
        try:
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return
                with self._lock:
                    self.stderr_total += len(chunk)
                    self._stderr += chunk
                    if len(self._stderr) > 2 * STDERR_KEEP:
                        del self._stderr[:-STDERR_KEEP]
        except OSError:
            return

    def stderr_tail(self, limit: int = 4000) -> str:
        with self._lock:
            data = bytes(self._stderr[-min(limit, STDERR_KEEP):])
            dropped = self.stderr_total - len(data)
        text = data.decode("utf-8", "replace")
        return f"[{dropped} earlier bytes not kept]\n{text}" if dropped > 0 and text else text

    # -- writing ------------------------------------------------------------------------------------

    def write(self, payload: bytes) -> threading.Thread:
        """Write ``payload`` to stdin from a thread (a command that does not read cannot block the kit)."""

        def run() -> None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(payload)
                self.proc.stdin.flush()
            except (OSError, ValueError):
                pass  # it exited or closed stdin: the reader sees the rest

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def close_stdin(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except (OSError, ValueError):
            pass

    # -- ending -------------------------------------------------------------------------------------

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float) -> int | None:
        """The exit status, or ``None`` if it is still running after ``timeout`` seconds."""
        try:
            return self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the command, its process group and every process that carries its token."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        kill_token(self.token)
        self.close_stdin()
        self.wait(5)
        self.lines.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        _LIVE.discard(self)


def _processes(*files: str) -> Iterator[tuple[int, list[bytes]]]:
    """Each live process (Linux ``/proc``) whose ``files`` (``environ``, ``stat``...) can be read: its pid
    and their contents."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        contents = []
        try:
            for name in files:
                with open(f"/proc/{entry}/{name}", "rb") as f:
                    contents.append(f.read())
        except OSError:
            continue
        yield int(entry), contents


def processes_with_token(token: str) -> list[int]:
    """Pids of the live processes whose environment carries ``CODEMODE_IUT=token`` (Linux ``/proc``)."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    return [pid for pid, (environ,) in _processes("environ") if needle in environ.split(b"\0")]


def kill_token(token: str, rounds: int = 5) -> None:
    """SIGKILL every process carrying ``token``, again until none is left (one may fork meanwhile)."""
    for _ in range(rounds):
        pids = [p for p in processes_with_token(token) if p != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


_STARTED: set[int] = set()  # pids of the commands started from this process (not orphans)


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux; elsewhere a no-op)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


_REAPER: list[bool] = []  # whether this process became a subreaper, once it tried


def _adopt_orphans() -> None:
    if not _REAPER:
        _REAPER.append(_become_subreaper())


def orphans() -> list[int]:
    """This process's children that it did not start itself, in a session not its own: descendants of
    a command whose parent exited, re-parented here (see the module docstring)."""
    me, session = os.getpid(), os.getsid(0)
    found = []
    for pid, (stat, cmdline) in _processes("stat", "cmdline"):
        fields = stat[stat.rindex(b")") + 2 :].split()
        # the kit's own helpers (its V8 worker) are children it started too, though not as commands
        if (int(fields[1]) == me and int(fields[3]) != session and pid not in _STARTED
                and b"conformance.v8worker" not in cmdline):
            found.append(pid)
    return found


def kill_orphans(rounds: int = 5) -> None:
    """SIGKILL every orphan re-parented to this process (and what it started meanwhile), and reap them."""
    for _ in range(rounds):
        pids = orphans()
        if not pids:
            return
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)  # an orphan that made its own session leads its group
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        time.sleep(0.01)


@atexit.register
def _kill_all() -> None:
    for proc in list(_LIVE):
        proc.kill()
    if _REAPER and _REAPER[0]:
        kill_orphans()
