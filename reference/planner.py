"""The reference planner: instruction + catalog -> lexer -> model -> decode -> validation -> plan or diagnostic.

Every stage can refuse, and a refusal is a diagnostic that says which stage refused and why: an invalid
catalog (``IN-*``), an instruction the frontend rejects (``IN-LENGTH``, ``IN-STRING``, ``IN-NUMBER``), a
request the model reads as unsupported, tags that do not decode into calls, or a decoded plan that
``reference.plan`` finds invalid for the catalog (a required argument the instruction does not give, a
tool not in the catalog). Nothing is truncated and nothing raises: :meth:`Planner.respond_many` returns one
response per request, in order. A diagnostic quotes at most 40 characters of any token.

Requests are planned in batches for throughput: they are sorted by length and padded only to the longest
of each chunk. The model's answer for one request does not depend on what it is batched with. A batch is
planned with Python's cyclic garbage collector paused and PyTorch's oneDNN kernels off (see
:func:`_planning`), and on one intra-op thread unless the planner is made with more (``threads``): the
network is too small to gain from a second thread, and a thread that waits on a busy core stalls every
operation (see :class:`Planner`).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from reference import model as M
from reference.catalog import Catalog
from reference.compiler import compile_plan
from reference.jsonio import json_equal
from reference.lexer import Token, lex, shown
from reference.names import is_tool_name
from reference.plan import Plan, has_type, validate_plan
from reference.violations import InvalidRecord, Violation

#: tokens per batch the network runs (padding included): small batches keep its tensors in the core's
#: cache, which makes them faster per instruction than large ones (``codemode bench plan`` measures)
BATCH_TOKENS = 512

#: how much likelier (in logits) the network must find "reject" than either schedule for a request to be
#: refused as unsupported: a request it is not sure of is planned, and decoding and validation still
#: refuse what does not make a valid plan. Chosen on generated requests (seeds of neither training nor
#: certification: none of 1,500 unsupported ones falls below it) and on the development corpus
#: (``corpora/dev``, whose misses are read: 2.0 planned no more of its supported requests and refused
#: fewer of its unsupported ones)
REJECT_MARGIN = 1.0

#: how much likelier (in logits) the network must find the output kind "all" than both "last" and the default
#: for it to be taken: for one call, "all" (an array of one record) is said only in so many words, and an
#: unsure "all" is the default, "last" (for several calls the default is "all" anyway). Chosen on generated
#: requests (no answer to the 3,866 of 4,000 held-out seeds differs from margin 0) and on the development
#: corpus (2.0 reads more of its single calls right than 0 or 1.0, and none wrong)
OUTPUT_MARGIN = 2.0

#: how much likelier (in logits) the network must find "parallel" than "sequential" for several calls to be
#: planned in parallel: calls said with no schedule run one after another (the contract's default), so an
#: unsure "parallel" is sequential. Chosen on generated requests (no answer to the 4,000 held-out seeds
#: differs from margin 0 with margins up to 1) and on the development corpus (0.5 to 1 read two more of its
#: requests right than 0, "bedtime routine pls: turn_off_lights …, lock_door …, set_thermostat …"; 0.75
#: is the middle of that range; 1.5 and more read fewer)
PARALLEL_MARGIN = 0.75


def _diagnostic(violations: Sequence[Violation]) -> dict[str, Any]:
    return {"diagnostic": "; ".join(f"{v.clause}: {v.message}" for v in violations)}


class Planner:
    """The reference planner around a :class:`reference.model.TinyCodemode` (the shipped weights by default).

    With ``workers`` above 1, a large :meth:`respond_many` is split into shards answered at once by that
    many worker processes (each with the same network on one thread, started on first use and kept), so
    every core does the Python half of planning too, not only the network's matrix products. The answers
    are the same as in-process ones: the network's answer for a request does not depend on its batch.

    ``threads`` is how many intra-op threads PyTorch uses while this planner plans in-process (1 by
    default; ``None``: whatever the process is set to). It is set for each batch and set back after, so
    making or using a planner leaves the caller's own setting as it was. One thread is the default
    because the network's operations are tiny: a second thread gains little when the cores are idle,
    and when another process keeps a core busy (``make certify`` runs the kit beside the planner) every
    operation waits for the thread stuck behind it: on two cores with one busy, torch's default of two
    threads took tens of milliseconds per instruction (p50) where one thread takes under one
    (``codemode bench plan --contended`` measures both). The answers are the same either way.
    """

    #: below this many requests a batch is answered in-process (the round trip would cost more)
    SHARD_MIN = 64

    def __init__(
        self, network: M.TinyCodemode | None = None, *, js: bool = False, workers: int = 1, threads: int | None = 1
    ) -> None:
        if threads is not None and threads < 1:
            raise ValueError(f"{threads} threads: a planner runs on at least 1")
        self.threads = threads
        self.network = network if network is not None else M.load()
        self.network.eval()
        # TorchScript, frozen: the same function (identical outputs), about half the per-op overhead
        try:
            self.forward: Any = torch.jit.freeze(torch.jit.script(self.network))
        except Exception:  # pragma: no cover - a torch without TorchScript: run eagerly
            self.forward = self.network
        self.js = js
        self.workers = max(1, workers)
        self._pool: Any = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker processes, if any were started."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Planner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the public entry points --

    def respond(self, instruction: str, tools: Any) -> dict[str, Any]:
        return self.respond_many([(instruction, tools)])[0]

    def respond_many(self, requests: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        """One response per ``(instruction, raw tools)`` pair, in order: ``{"plan": ...}`` (with ``"js"``
        when the planner was made with ``js=True``) or ``{"diagnostic": ...}``."""
        with _planning(), _intra_op_threads(self.threads):
            if self.workers > 1 and len(requests) >= self.SHARD_MIN * 2:
                return self._sharded(requests)
            return self._respond_here(requests)

    def _sharded(self, requests: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            config = dataclasses.asdict(self.network.config)
            state = {k: v.detach().clone() for k, v in self.network.state_dict().items()}
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),  # never fork a process that holds threads
                initializer=_start_worker,
                initargs=(config, state, self.js),
            )
        # twice as many shards as workers, taken by whichever worker is free: a worker slowed down (by
        # the machine, or by longer instructions) does less of the batch instead of holding it up
        n = len(requests)
        size = max(self.SHARD_MIN // 2, -(-n // (2 * self.workers)))
        shards = [list(requests[k : k + size]) for k in range(0, n, size)]
        out: list[dict[str, Any]] = []
        try:
            for answers in self._pool.map(_worker_respond, shards):
                out.extend(answers)
        except Exception:  # a worker died (killed, out of memory): answer here, start afresh next time
            self.close()
            return self._respond_here(requests)
        return out

    def _respond_here(self, requests: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any] | None] = [None] * len(requests)
        pending: list[tuple[int, tuple[Token, ...], Catalog]] = []
        for k, (instruction, tools) in enumerate(requests):
            try:
                catalog = Catalog.from_json(tools)
            except InvalidRecord as err:
                out[k] = _diagnostic(err.violations)
                continue
            lexed = lex(instruction)
            if not lexed.ok:
                out[k] = _diagnostic(lexed.violations)
                continue
            pending.append((k, lexed.tokens, catalog))
        pending.sort(key=lambda item: len(item[1]))
        for chunk in _chunks(pending):
            for (k, tokens, catalog), answer in zip(chunk, self._plan_chunk(chunk)):
                out[k] = answer
        return [o if o is not None else {"diagnostic": "internal: no answer"} for o in out]

    # -- stages --

    def _plan_chunk(self, chunk: list[tuple[int, tuple[Token, ...], Catalog]]) -> list[dict[str, Any]]:
        lexicon = self.network.lexicon
        rows = [M.featurize(tokens, catalog, lexicon) for _, tokens, catalog in chunk]
        ids, feats, mask = M.batch(rows)
        with self._lock, torch.inference_mode():
            tag_logits, schedule_logits, output_logits = self.forward(ids, feats, mask)
        tags = tag_logits.argmax(dim=2).tolist()
        # reject only when the network is sure of it by REJECT_MARGIN (in logits) over both schedules, and
        # parallel only when it is sure of it by PARALLEL_MARGIN over sequential (three numbers a row: compared
        # in Python, cheaper than more tensor operations for a batch of one)
        schedules = [0 if r - max(s, p) > REJECT_MARGIN else 1 if s >= p - PARALLEL_MARGIN else 2 for r, s, p in schedule_logits.tolist()]
        # "all" only when the network is sure of it by OUTPUT_MARGIN over both other kinds; an unsure "all" is
        # the default ("all" for several calls too, "last" for one); "last" when it beats both others
        outputs = [0 if a - max(l, d) > OUTPUT_MARGIN else 1 if l > max(a, d) else 2 for a, l, d in output_logits.tolist()]
        answers = []
        for r, (_, tokens, catalog) in enumerate(chunk):
            answers.append(
                self._answer(
                    tokens,
                    catalog,
                    [M.TAGS[t] for t in tags[r][: len(tokens)]],
                    M.SCHEDULES[schedules[r]],
                    M.OUTPUTS[outputs[r]],
                    lambda r=r, n=len(tokens): tag_logits[r, :n].tolist(),
                )
            )
        return answers

    def _answer(self, tokens: tuple[Token, ...], catalog: Catalog, tags: list[str], schedule: str, output: str,
                logits: Any = None) -> dict[str, Any]:
        raw = decode(tokens, tags, schedule, output, catalog)
        problems = validate_plan(raw, catalog) if not isinstance(raw, str) else []
        if (isinstance(raw, str) or problems) and schedule != "reject" and logits is not None:
            second = reread(tokens, tags, schedule, output, catalog, logits(), said=raw)
            if second is not None:
                raw, problems = second, []
        if isinstance(raw, str):
            return {"diagnostic": raw}
        if problems:
            return {"diagnostic": "the decoded plan is not valid for this catalog: " + _diagnostic(problems)["diagnostic"]}
        if not self.js:
            return {"plan": raw}
        try:
            js = compile_plan(Plan.from_json(raw, catalog), catalog)
        except InvalidRecord as exc:  # validate_plan passed, so this is not expected
            return {"diagnostic": f"the plan does not compile: {exc}"}
        return {"plan": raw, "js": js}


_PLANNING = 0  # how many batches are being planned (by any thread)
_PLANNING_LOCK = threading.Lock()
_RESTORE = (False, False)  # the collector's and oneDNN's states when the first of them began


@contextmanager
def _planning() -> Iterator[None]:
    """While any batch is being planned: the cyclic garbage collector is paused and PyTorch's oneDNN
    kernels are off; both are restored as they were once the last batch is answered.

    - A batch makes tens of thousands of short-lived objects (tokens, catalogs, plans) that live until
      it is answered, so they survive young collections, and every few batches the collector makes a
      full pass over every object in the process. In a process that holds many (a test run, a fuzzing
      campaign) those passes took a third of the planning time. What a batch allocates holds no
      reference cycles and is freed by reference counting; anything cyclic is collected once the
      collector runs again.
    - oneDNN runs the exact GELU of every contiguous float tensor, at a fixed cost of about 13 us a
      call that PyTorch's own kernel does not have: a third of the network's time for one instruction.
      The two differ by float rounding (about 1e-6), so the network runs on PyTorch's kernels always,
      alone or batched, in-process or in a worker, and its answers do not depend on where it ran."""
    global _PLANNING, _RESTORE
    with _PLANNING_LOCK:
        if _PLANNING == 0:
            _RESTORE = (gc.isenabled(), torch.backends.mkldnn.enabled)
            gc.disable()
            torch.backends.mkldnn.enabled = False
        _PLANNING += 1
    try:
        yield
    finally:
        with _PLANNING_LOCK:
            _PLANNING -= 1
            if _PLANNING == 0:
                collector, onednn = _RESTORE
                if collector:
                    gc.enable()
                torch.backends.mkldnn.enabled = onednn


@contextmanager
def _intra_op_threads(threads: int | None) -> Iterator[None]:
    """PyTorch's intra-op thread count set to ``threads`` (``None``: left alone), and set back after.
    The count is the calling thread's (OpenMP keeps it per thread), which is the one that plans."""
    was = torch.get_num_threads()
    if threads is None or threads == was:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(was)


_WORKER: Planner | None = None


def _start_worker(config: dict[str, Any], state: dict[str, Any], js: bool) -> None:
    global _WORKER
    torch.set_num_threads(1)  # one core per worker: the workers are the parallelism
    network = M.TinyCodemode(M.Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}))
    network.load_state_dict(state)
    _WORKER = Planner(network, js=js)


def _worker_respond(requests: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    assert _WORKER is not None
    return _WORKER.respond_many(requests)  # a worker's own planner has one worker: it answers in-process


def _chunks(pending: list[Any]) -> list[list[Any]]:
    """Length-sorted requests cut into batches of about :data:`BATCH_TOKENS` tokens (padded) whose
    lengths are close, so padding (which every token of the batch pays for) stays small."""
    out: list[list[Any]] = []
    for item in pending:
        n = len(item[1])
        if out and (len(out[-1]) + 1) * n <= BATCH_TOKENS and n <= len(out[-1][0][1]) * 5 // 4 + 4:
            out[-1].append(item)
        else:
            out.append([item])
    return out


def decode(tokens: Sequence[Token], tags: Sequence[str], schedule: str, output: str, catalog: Catalog) -> dict[str, Any] | str:
    """A candidate plan (raw JSON) from the model's tags and classes, or a diagnostic string.

    Calls are the ``CALL`` tokens in order (a word no tool can be called, such as "0417" or a reserved
    word, is said in passing whatever its tag), and an ``AGAIN`` token (one mention for repeated calls: "X
    twice, once with … and once with …") is another call of the tool of the call before it. An argument
    name joins the call before (``ARG<``) or after (``ARG>``) it; one its call already has starts another
    call of that tool ("X for city "Paris" and city "Rome""), unless that call comes out the same as the
    one before it (a name and value said twice). A value fills the nearest argument name
    before (``VAL<``) or after (``VAL>``) it; a value whose nearest names are filled already is that value
    said twice when one of them has that same value, and otherwise, listed after the last call's name and
    outside brackets, another call of that tool with that argument ("X for id "1", "2" and "3"). A
    ``SHARE`` word gives the argument before it to every call of that tool ("year 2025 for all three"), and
    calls of one tool named once (told apart by an argument named again, or by a list of values), when one
    of them lacks a required argument another was given, share every argument only some of them are
    given, with one value ("X for date "D": clinic "A" and clinic "B""); and where two or three calls said
    "once" or "again" follow a call and one of them lacks a required argument that call was given, what
    was said for it is said for each of them ("X twice for a "1": once with b "2" and once with b "3"").
    Tools named together with only a joiner between them share what is said after the last of them, where
    one is given nothing of its own and lacks a required argument the next was given ("get_patient and
    check_insurance for mrn "…""). Fields are the ``FIELD`` tokens in order; the limit is the ``LIMIT`` number. One call is ``single``;
    2-3 calls take the schedule; an unnamed output kind is ``last`` for one call and ``all`` for more.
    """
    if schedule == "reject":
        return (
            "this request is not one the contract supports (dependencies between calls, conditions, retries,"
            " loops, code, filtering/sorting/aggregation, mixed schedules, more than 3 calls, unknown tools or"
            " nested arguments): it is refused rather than planned"
        )
    names = {t.name for t in catalog.tools}
    # a tool's own name read as another call of the tool before it ("…, and then molarity with …") is a call of
    # the tool it names
    tags = ["CALL" if tag == "AGAIN" and tokens[i].text in names else tag for i, tag in enumerate(tags)]
    at: dict[str, list[int]] = {tag: [] for tag in M.TAGS}  # where each tag is, in order
    for i, tag in enumerate(tags):
        # a word no catalog could call a tool ("Store 0417 reports …", a reserved word) is said in passing
        if tag != "O" and not (tag == "CALL" and tokens[i].kind == "word" and not is_tool_name(tokens[i].text)):
            at[tag].append(i)
    calls: list[dict[str, Any]] = []
    repeated: set[int] = set()  # the calls an AGAIN word started (their ids)
    call_at = sorted(at["CALL"] + at["AGAIN"])
    for i in call_at:
        if tags[i] == "AGAIN":  # "once more", "again": the tool of the call before, called again
            if not calls:
                return f"{shown(tokens[i].text)!r} repeats a call, but no call comes before it"
            calls.append({"tool": calls[-1]["tool"], "args": {}})
            repeated.add(id(calls[-1]))
        elif tokens[i].kind != "word":
            return f"{shown(tokens[i].text)!r} cannot name a tool"
        else:
            calls.append({"tool": tokens[i].text, "args": {}})
    # tools named together, with only a joiner between them ("get_patient and check_insurance for mrn …"): the
    # calls whose arguments may be said once, after the last of them (their ids, in order)
    together = [(id(calls[k]), id(calls[k + 1])) for k in range(len(call_at) - 1)
                if tags[call_at[k]] == tags[call_at[k + 1]] == "CALL" and call_at[k + 1] > call_at[k] + 1
                and all(t.text.lower() in LIST_JOINERS for t in tokens[call_at[k] + 1 : call_at[k + 1]])]
    if not calls:
        return "the instruction names no catalog tool to call"
    if len(calls) > 3:
        return f"the instruction asks for {len(calls)} calls; at most 3 are supported"
    for call in calls:
        if call["tool"] not in names:
            return f"{shown(call['tool'])!r} is not a tool of this catalog"
    tools = {t.name: t for t in catalog.tools}
    # argument names: which call each belongs to (see :func:`_owners`). A name its call already has starts
    # another call of that call's tool ("X for city "Paris" and city "Rome"": one argument is never named
    # twice in one call), just before the name
    starts: list[float] = [float(i) for i in call_at]
    again: list[dict[str, Any]] = []  # the calls an argument named again started
    while True:
        found = _owners(tokens, tags, at, starts, calls, tools)
        if isinstance(found, str):
            return found
        owner, split = found
        if split is None:
            break
        k = sum(1 for where in starts if where < split)
        calls.insert(k, {"tool": calls[k - 1]["tool"], "args": {}})
        again.append(calls[k])
        starts.insert(k, split - 0.5)
        if len(calls) > 3:
            return f"the instruction asks for {len(calls)} calls; at most 3 are supported"
    # values: each fills the nearest argument name on the side its tag says (VAL< before, VAL> after); when
    # that name already has a value, the nearest name on the other side, if it has none
    filled: dict[int, Any] = {}
    listed: list[tuple[int, str, Any]] = []  # values listed after a name the last call has filled
    last = len(calls) - 1
    for i in sorted(at["VAL<"] + at["VAL>"]):
        tok = tokens[i]
        if tok.kind not in ("string", "number", "boolean"):
            return f"{shown(tok.text)!r} is not a value (values are quoted strings, numbers, true or false)"
        before = next((j for j in range(i - 1, -1, -1) if j in owner), None)
        after = next((j for j in range(i + 1, len(tags)) if j in owner), None)
        sides = [before, after] if tags[i] == "VAL<" else [after, before]
        value = _plain(tok.value)

        def holds(j: int | None) -> bool:  # the name at j has this value already
            return j is not None and j in filled and json_equal(filled[j], value)

        if (tags[i] == "VAL<" and before in filled and owner[before] == last and len(calls) < 3
                and not holds(before) and _listed(tokens, before, i)):
            # a list of values after the last call's name ("X for id "1", "2" and "3"): one call each
            calls.append({"tool": calls[owner[before]]["tool"], "args": {}})
            listed.append((len(calls) - 1, tokens[before].text, value))
            continue
        if holds(sides[0]):
            continue  # the value its name already has, said again ("250 bucks … amount 250, from …")
        target = next((j for j in sides if j is not None and j not in filled), None)
        if target is None:
            if all(j is None for j in sides):
                return f"the value {shown(tok.text)} belongs to no argument"
            if holds(sides[1]):
                continue  # the same value said twice ("invoice "INV-7" ... (invoice_id "INV-7")")
            nearest = next(j for j in sides if j is not None)
            return f"argument {shown(tokens[nearest].text)!r} {TWO_VALUES}"
        filled[target] = value
    # an argument name with no value is a word that only looks like one ("send it to the team", with an
    # argument named "to"): left out, so that a required argument it leaves missing is refused below
    for i, c in owner.items():
        if i not in filled:
            continue
        args = calls[c]["args"]
        name = tokens[i].text
        if name in args and not json_equal(args[name], filled[i]):
            return f"argument {shown(name)!r} {TWO_VALUES} in call {c + 1}"
        args[name] = filled[i]
    for c, name, value in listed:
        calls[c]["args"][name] = value
    # "…, year 2025 for all three": the argument named nearest before a SHARE word goes to every call of
    # its call's tool that does not have it
    for s in at["SHARE"]:
        j = next((j for j in range(s - 1, -1, -1) if j in owner and j in filled), None)
        if j is None:
            return f"{shown(tokens[s].text)!r} shares an argument, but no argument with a value comes before it"
        tool, name = calls[owner[j]]["tool"], tokens[j].text
        for call in calls:
            if call["tool"] == tool:
                call["args"].setdefault(name, filled[j])
    # calls of one tool named once are told apart by the arguments they name again (or a list of values): each
    # such call follows the call its tool was named for. Where one of them lacks a required argument another
    # was given, what only some of them are given, with one value, is said for all ("find_slots for date
    # "…": clinic "A" and clinic "B"", "get_inventory for sku "…" at store "1", "2" and "3""). (Where each
    # has what its tool requires, each keeps only what is said for it, as the kit's grammar renders calls
    # with arguments of their own; a call said "again with …" is told all it has, as a named one is.)
    told_apart = {id(c) for c in again} | {id(calls[c]) for c, _, _ in listed}
    groups: list[list[dict[str, Any]]] = []
    for call in calls:
        if id(call) in told_apart:
            groups[-1].append(call)
        else:
            groups.append([call])
    for group in groups:
        if not any(r not in call["args"] and any(r in other["args"] for other in group)
                   for call in group for r in tools[call["tool"]].required):
            continue
        for name in {a for call in group for a in call["args"]}:
            given = [call["args"][name] for call in group if name in call["args"]]
            if len(given) < len(group) and all(json_equal(v, given[0]) for v in given[1:]):
                for call in group:
                    call["args"].setdefault(name, given[0])
    # "X twice for …: face 100, years 10, once with yield 380 and once with yield 420": what is said for a
    # call before two or three calls said "once"/"again" is said for each of them (that call is no call of
    # its own), where one of them would lack a required argument it was given and none names one of its
    # arguments again
    k = 0
    while k < len(calls):
        first = calls[k]
        follow = list(itertools.takewhile(lambda c: id(c) in repeated, calls[k + 1 :]))
        if (len(follow) >= 2 and first["args"] and id(first) not in repeated
                and not any(a in c["args"] for c in follow for a in first["args"])
                and any(r in first["args"] and r not in c["args"] for c in follow for r in tools[first["tool"]].required)):
            for c in follow:
                c["args"] = {**first["args"], **c["args"]}
            del calls[k]  # calls[k] is now follow[0], which starts no group (it is in ``repeated``): skipped
        k += 1
    # a call started by an argument named again with the same value is that argument said twice
    # ("invoice_id "INV-7" ... (invoice_id "INV-7")"), not another call
    calls = [c for k, c in enumerate(calls)
             if not (k and any(c is a for a in again) and c["tool"] == calls[k - 1]["tool"]
                     and json_equal(c["args"], calls[k - 1]["args"]))]
    # "get_patient and check_insurance for mrn "…"": a call named together with the one after it and given no
    # argument of its own, when it lacks a required argument that one was given, is given what that one was
    # (each argument its tool takes, of its type); from the last pair back ("X, Y and Z for id 5")
    live = {id(c): c for c in calls}
    for a_id, b_id in reversed(together):
        first, second = live.get(a_id), live.get(b_id)
        if first is None or second is None or first["args"]:
            continue
        tool = tools[first["tool"]]
        if any(r in second["args"] for r in tool.required):
            first["args"] = {name: value for name, value in second["args"].items()
                             if (kind := tool.argument_type(name)) is not None and has_type(value, kind)}
    n = len(calls)
    mode = "single" if n == 1 else schedule
    kind = output if output != "default" else ("last" if n == 1 else "all")
    out: dict[str, Any] = {"kind": kind}
    fields = [tokens[i].text for i in at["FIELD"]]
    limits = [tokens[i] for i in at["LIMIT"]]
    if fields:
        if len(set(fields)) != len(fields):
            return "a field is named twice"
        out["fields"] = fields
    if limits:
        if len(limits) > 1:
            return "more than one row limit"
        value = limits[0].value
        if limits[0].kind != "number" or not float(value).is_integer():  # type: ignore[arg-type]
            return f"the row limit {shown(limits[0].text)} is not an integer"
        out["limit"] = int(value)  # type: ignore[arg-type]
    return {"mode": mode, "calls": calls, "output": out}


#: the words that say another call of the tool of the call before ("X twice, once with … and once with …",
#: "… and again with …"): a word read so that is none of them is reread as said in passing (:func:`reread`)
AGAIN_WORDS = frozenset({"once", "again"})

#: what :func:`decode` says of an argument given a second, different value (:func:`reread` then rereads what
#: such a request says before its first call or in a remark in brackets)
TWO_VALUES = "is given two values"

#: what may stand between two values of a list ("id "1", "2" and "3"")
LIST_JOINERS = frozenset({",", "and", "then", "&", "/"})


def _listed(tokens: Sequence[Token], name: int, i: int) -> bool:
    """Whether the value at ``i`` is the next of a list of values after the argument name at ``name``: the
    value before it follows the name, and joiners stand between the two, nothing else (not a word that could
    be an argument name of no catalog tool, as in "title "A" severity "high"", nor a bracket)."""
    previous = next((j for j in range(i - 1, name, -1) if tokens[j].kind in ("string", "number", "boolean")), None)
    between = tokens[previous + 1 : i] if previous is not None else ()
    bracketed = any(t.kind == "punct" and t.text in ("[", "{") for t in tokens[name + 1 : i])
    return bool(between) and not bracketed and all(t.text.lower() in LIST_JOINERS for t in between)


def _owners(tokens: Sequence[Token], tags: Sequence[str], at: dict[str, list[int]], starts: Sequence[float],
            calls: list[dict[str, Any]], tools: dict[str, Any]) -> tuple[dict[int, int], float | None] | str:
    """Which call each argument name belongs to (token index -> call index), given where the calls start;
    or where a name its call already has starts another call of that tool; or a diagnostic. The tag says
    before (``ARG<``) or after (``ARG>``); when that call's tool does not declare the argument, or already
    has it, the call on the other side is taken if it can take it (arguments between two calls are the
    ones a reader may attach either way)."""
    owner: dict[int, int] = {}
    taken: set[tuple[int, str]] = set()
    for i in sorted(at["ARG<"] + at["ARG>"]):
        name = tokens[i].text
        if tokens[i].kind != "word":
            return f"{shown(name)!r} cannot name an argument"
        before = [c for c, where in enumerate(starts) if where < i]
        after = [c for c, where in enumerate(starts) if where > i]
        sides = [before[-1] if before else None, after[0] if after else None]
        if tags[i] == "ARG>":
            sides.reverse()
        fits = [c for c in sides if c is not None and tools[calls[c]["tool"]].argument_type(name) and (c, name) not in taken]
        if not fits and before and (before[-1], name) in taken:
            return owner, float(i)
        choice = fits[0] if fits else sides[0]
        if choice is None:
            return f"argument {shown(name)!r} belongs to no call"
        owner[i] = choice
        taken.add((choice, name))
    return owner, None


#: how many other readings :func:`reread` tries, at most, and how far below the model's choice (in
#: logits) a tag may be for a reading to try it
REREADS = 12
REREAD_GAP = 5.0
_TAG_INDEX = {t: k for k, t in enumerate(M.TAGS)}
_VALUE_TAGS = ("VAL<", "VAL>")
_NAME_TAGS = ("O", "ARG<", "ARG>")
_SHAPE_TAGS = ("LIMIT", "FIELD")


def reread(tokens: Sequence[Token], tags: Sequence[str], schedule: str, output: str, catalog: Catalog,
           logits: Sequence[Sequence[float]], *, said: dict[str, Any] | str | None = None) -> dict[str, Any] | None:
    """When the model's best tags do not decode into a valid plan: the valid plan of the likeliest other
    reading, or ``None``. The readings tried change one or two of the tags the model was least sure of, and
    only where a reader could hesitate: which side a value's argument name is on (``VAL<``/``VAL>``), whether
    a value read as said in passing (``O``) is an argument's after all ("log_workout … 60 minutes"), whether
    a word that is an argument name of the catalog is one here (``O``/``ARG<``/``ARG>``), whether a word read
    as a field or a number read as the row limit was only said in passing (``O``), and whether "once" or
    "again" read as another call of the tool before it was only said in passing ("once that's done", ``O``);
    and, last, however sure the model was, the reading in which every tool named again after a call of it is
    a mention of that call (``O``), and the one in which a word read as another call that is no word saying so
    (``AGAIN_WORDS``: "against" is not "again") is said in passing (``O``); and, where the model's tags give an
    argument two values and a value before the first call or in a remark in brackets was read as an
    argument's ("Each was a false alarm: close_ticket …", "volume_l 0.25 (a flask of 250 mL)"), the ones in
    which such parts are said in passing. Beyond these, no call is ever dropped, no value is ever dropped and
    every argument name read as one must get its value, so a request that names too many calls, a tool or
    argument not in the catalog, a value with no argument or an argument with no value stays refused.
    ``said`` is what :func:`decode` made of ``tags``, where the caller has it already."""
    names = {a for t in catalog.tools for a, _ in t.arguments}
    changes: list[tuple[float, int, str]] = []
    for i, (tok, tag) in enumerate(zip(tokens, tags)):
        if tok.kind in ("string", "number", "boolean") and tag in _VALUE_TAGS + ("O",):
            allowed = _VALUE_TAGS  # which side its name is on; or, read as said in passing, a value after all
        elif tok.kind == "word" and tok.text in names and tag in _NAME_TAGS:
            allowed = _NAME_TAGS
        elif tag in _SHAPE_TAGS:  # a number or word said in passing ("coming at 8"), read as a limit or field
            allowed = ("O",)
        elif tag == "AGAIN":  # "once" as in "once that's done", read as another call
            allowed = ("O",)
        else:
            continue
        row = logits[i]
        changes += [(gap, i, alt) for alt in allowed
                    if alt != tag and (gap := row[_TAG_INDEX[tag]] - row[_TAG_INDEX[alt]]) < REREAD_GAP]
    changes.sort()
    options: list[tuple[float, tuple[tuple[int, str], ...]]] = [(c, ((i, alt),)) for c, i, alt in changes[:6]]
    best = changes[:4]
    options += [(a[0] + b[0], ((a[1], a[2]), (b[1], b[2]))) for k, a in enumerate(best) for b in best[k + 1 :] if a[1] != b[1]]
    options.sort(key=lambda o: o[0])
    readings = [edits for _, edits in options[:REREADS]]
    # last, however sure the model was: a tool named again after its call is a mention of that call ("I only
    # need the play_song result"), not another call with no arguments
    called: set[str] = set()
    mentions = []
    for i, tag in enumerate(tags):
        if tag == "CALL":
            if tokens[i].text in called:
                mentions.append((i, "O"))
            called.add(tokens[i].text)
    if mentions:
        readings.append(tuple(mentions))
    # and a word read as another call of the tool before it that is no word saying so ("once", "again"),
    # such as "against" (read by its first letters), is said in passing
    lookalikes = tuple((i, "O") for i, tag in enumerate(tags) if tag == "AGAIN" and tokens[i].text.lower() not in AGAIN_WORDS)
    if lookalikes:
        readings.append(lookalikes)
    # and where an argument is given two values, the readings in which what was said before the first call, or
    # in a remark in round brackets with no call in it, holds a value read as an argument's and is said in
    # passing ("Each was a false alarm: close_ticket …", "the filter on line 2 again. create_work_order … line
    # "L2"", "volume_l 0.25 (a flask of 250 mL)"): each such part alone, then all of them
    remarks = [span for span in _remarks(tokens, tags) if any(tags[i] in _VALUE_TAGS for i in span)]
    if remarks:
        if said is None:
            said = decode(tokens, tags, schedule, output, catalog)
        if isinstance(said, str) and TWO_VALUES in said:
            parts = remarks + [[i for span in remarks for i in span]] if len(remarks) > 1 else remarks
            readings += [tuple((i, "O") for i in part if tags[i] != "O") for part in parts]
    for edits in readings:
        other = list(tags)
        for i, alt in edits:
            other[i] = alt
        raw = decode(tokens, other, schedule, output, catalog)
        named = sum(t in ("ARG<", "ARG>") for t in other)
        if not isinstance(raw, str) and sum(len(c["args"]) for c in raw["calls"]) >= named and not validate_plan(raw, catalog):
            return raw  # (a reading in which an argument name is left without its value is no reading)
    return None


def _remarks(tokens: Sequence[Token], tags: Sequence[str]) -> list[list[int]]:
    """The parts of a request a reader may take as said in passing: what comes before its first call, and
    each remark in round brackets (innermost first) with no call in it (token indices)."""
    spans: list[list[int]] = []
    first = next((i for i, tag in enumerate(tags) if tag == "CALL"), None)
    if first:
        spans.append(list(range(first)))
    opened: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.kind != "punct":
            continue
        if tok.text == "(":
            opened.append(i)
        elif tok.text == ")" and opened:
            start = opened.pop()
            if all(tags[j] not in ("CALL", "AGAIN") for j in range(start + 1, i)):
                spans.append(list(range(start + 1, i)))
    return spans


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value
