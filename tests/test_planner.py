"""The reference planner's answers do not depend on how requests are batched or sharded; a batch pauses
the cyclic garbage collector and turns oneDNN off, runs the network on the planner's intra-op threads
(one by default), and leaves all three as they were."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")  # the planner needs the [planner] extra; without it, nothing to test

from reference import model as M  # noqa: E402
from reference.lexer import lex  # noqa: E402
from reference import planner as planner_module  # noqa: E402
from reference.planner import Planner  # noqa: E402
from conformance.training import held_out  # noqa: E402


@pytest.fixture(scope="module")
def network() -> M.TinyCodemode:
    return M.load()


def test_a_rows_logits_do_not_depend_on_its_batch(network: M.TinyCodemode) -> None:
    """Padding sends nothing to real tokens (not even a bias) and is not pooled: a row's logits are the
    same alone as beside longer rows, up to float rounding, and its argmaxes are identical."""
    rows = []
    for item in held_out(120, base=900_000):
        lexed = lex(item.text)
        if lexed.ok:
            rows.append(M.featurize(lexed.tokens, item.catalog, network.lexicon))
    rows = rows[:40]
    assert len({len(ids) for ids, _ in rows}) > 5  # really padded
    with torch.inference_mode():
        together = network(*M.batch(rows))
        for r, row in enumerate(rows):
            alone = network(*M.batch([row]))
            n = len(row[0])
            assert (together[0][r, :n] - alone[0][0, :n]).abs().max() < 1e-4
            assert torch.equal(together[0][r, :n].argmax(-1), alone[0][0, :n].argmax(-1))
            for head in (1, 2):
                assert (together[head][r] - alone[head][0]).abs().max() < 1e-4
                assert together[head][r].argmax() == alone[head][0].argmax()


def test_worker_processes_answer_as_the_planner_does(network: M.TinyCodemode) -> None:
    items = held_out(300, base=910_000)
    requests = [(item.text, item.catalog.to_json()) for item in items]
    requests += [("call it", "not a catalog"), ('"unterminated', requests[0][1])]  # refusals travel too
    here = Planner(network, js=True).respond_many(requests)
    with Planner(network, js=True, workers=2) as sharded:
        assert sharded.respond_many(requests) == here
        assert sharded._pool is not None  # it really sharded
        assert sharded.respond_many(requests[:5]) == here[:5]  # small batches stay in-process


@pytest.mark.parametrize("enabled", [True, False])
def test_a_batch_pauses_the_collector_and_onednn_and_leaves_them_as_they_were(network: M.TinyCodemode, enabled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    planner = Planner(network)
    seen = []
    inner = planner._respond_here

    def spy(requests: list[tuple[str, object]]) -> list[dict[str, object]]:
        seen.append((gc.isenabled(), torch.backends.mkldnn.enabled))
        return inner(requests)

    monkeypatch.setattr(planner, "_respond_here", spy)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        answers = planner.respond_many([("call it", "not a catalog")] * 3)
        assert len(answers) == 3 and seen == [(False, False)]  # the collector paused, oneDNN off
        assert gc.isenabled() is enabled and torch.backends.mkldnn.enabled

        def boom(requests: object) -> None:
            raise RuntimeError("boom")

        monkeypatch.setattr(planner, "_respond_here", boom)
        with pytest.raises(RuntimeError):
            planner.respond_many([("call it", "not a catalog")])
        assert gc.isenabled() is enabled and torch.backends.mkldnn.enabled  # restored after a failure too
    finally:
        gc.enable() if was else gc.disable()


def test_concurrent_batches_resume_the_collector_once_the_last_is_done() -> None:
    from reference.planner import _planning

    assert gc.isenabled() and torch.backends.mkldnn.enabled
    with _planning():
        with _planning():  # a second thread's batch, begun while the first runs
            assert not gc.isenabled() and not torch.backends.mkldnn.enabled
        assert not gc.isenabled() and not torch.backends.mkldnn.enabled  # the first is still running
    assert gc.isenabled() and torch.backends.mkldnn.enabled


def test_a_one_character_name_that_lexes_as_punctuation_is_an_identity() -> None:
    """U+2118 is an IdentifierName (Other_ID_Start) but not a word character: the lexer makes it a
    punctuation token, and the features give it its hashed identity, never a catalog name's features."""
    from reference.catalog import Catalog

    catalog = Catalog.from_json([{"name": "\u2118", "arguments": {}, "required": [], "returns": {"kind": "text"}}])
    tokens = lex("call \u2118").tokens
    assert [t.kind for t in tokens] == ["word", "punct"]
    lexicon = M.Lexicon(("call", "\u2118"))
    ids, codes = M.featurize(tokens, catalog, lexicon)
    assert ids[1] == lexicon.index["\u2118"] == M.SPECIALS + 1
    assert codes[1] == 1 << M.KINDS.index("punct")


@pytest.mark.parametrize(("threads", "expected"), [("default", 1), (1, 1), (2, 2), (None, 2)])
def test_the_network_runs_on_the_planners_threads_and_the_process_keeps_its_own(
    network: M.TinyCodemode, threads: object, expected: int
) -> None:
    """One intra-op thread unless the planner is made with more (``None``: the process's setting); the
    process's own count is the same before and after, so making or using a planner changes nothing."""
    was = torch.get_num_threads()
    torch.set_num_threads(2)  # torch's default on a 2-core machine, whatever this one has
    try:
        planner = Planner(network) if threads == "default" else Planner(network, threads=threads)  # type: ignore[arg-type]
        assert torch.get_num_threads() == 2  # making one changes nothing
        during: list[int] = []
        forward = planner.forward

        def spy(*args: object) -> object:
            during.append(torch.get_num_threads())
            return forward(*args)

        planner.forward = spy
        items = held_out(5, base=920_000)
        answers = planner.respond_many([(i.text, i.catalog.to_json()) for i in items])
        assert len(answers) == len(items) > 0 and during and set(during) == {expected}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(was)


def test_a_planner_needs_a_thread(network: M.TinyCodemode) -> None:
    with pytest.raises(ValueError, match="^0 threads"):
        Planner(network, threads=0)


def test_a_diagnostic_quotes_at_most_40_characters_of_a_token() -> None:
    """A 7 MB word the model tags as a tool is not echoed whole into the answer."""
    from reference.catalog import Catalog
    from reference.planner import decode

    catalog = Catalog.from_json([{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}])
    tokens = lex("call " + "w" * 7_000_000).tokens
    assert decode(tokens, ["O", "CALL"], "sequential", "default", catalog) == f"'{'w' * 37}...' is not a tool of this catalog"
    tokens = lex("t limit 1e-" + "0" * 1000 + "1").tokens  # exact (0.1), but not an integer
    assert decode(tokens, ["CALL", "O", "LIMIT"], "sequential", "default", catalog) == "the row limit 1e-0000000000000000000000000000000000... is not an integer"


def test_a_long_word_is_featurized_but_not_kept() -> None:
    """Words are cached for speed; one of megabytes (a request may hold one) is not kept after its request."""
    from reference.catalog import Catalog

    catalog = Catalog.from_json([{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}])
    long = "W" + "w" * 1_000_000
    lexicon = M.Lexicon(("call", "please", "~wwww"))
    ids, codes = M.featurize(lex(f"call t {long} please").tokens, catalog, lexicon)
    assert ids[2] == lexicon.index["~wwww"] and codes[2] & (1 << 23)  # its stem's identity, and a capital
    assert long not in lexicon.cache and "please" in lexicon.cache


def test_a_word_the_lexicon_lacks_is_its_stem_or_the_unknown_word_and_its_shape_is_kept() -> None:
    """No two words share an identity by accident: a word of the lexicon is its own, another word is its
    stem's when the lexicon has that stem, and otherwise the unknown word (never some other word's); how
    it is written (an underscore, a capital inside, a digit) is a feature of its own."""
    from reference.catalog import Catalog

    catalog = Catalog.from_json([{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}])
    lexicon = M.Lexicon(("call", "sort", "~sort"))
    tokens = lex("Call t sorted sort Sortable so zebra send_sms getUser v2").tokens
    ids, codes = M.featurize(tokens, catalog, lexicon)
    call, sort, stem = (lexicon.index[w] for w in ("call", "sort", "~sort"))
    assert ids == [call, M.NAME, stem, sort, stem, M.UNKNOWN, M.UNKNOWN, M.UNKNOWN, M.UNKNOWN, M.UNKNOWN]
    assert codes[0] & (1 << 23) and codes[4] & (1 << 23)  # capitals
    assert [bool(c & (1 << 26)) for c in codes[7:]] == [True, False, False]  # an underscore
    assert [bool(c & (1 << 27)) for c in codes[7:]] == [False, True, False]  # a capital inside
    assert [bool(c & (1 << 28)) for c in codes[7:]] == [False, False, True]  # a digit


def test_the_lexicon_holds_what_enough_training_instructions_say_and_never_the_stand_ins() -> None:
    from reference.train import MIN_COUNT, Example, identify, lexicon

    def ex(*words: str) -> Example:
        return Example(ids=[M.STRING, *words], codes=[0] * (len(words) + 1), tags=[], schedule=0, output=0, family="f")

    data = [ex("call", "sorted", "blick") for _ in range(MIN_COUNT)] + [ex("sorting", "rare") for _ in range(MIN_COUNT - 1)]
    words = lexicon(data, reserved=("Blick",))
    assert words == ("call", "sorted", "~sort")  # "sorting" and "rare" too seldom; the stand-in never
    identify(data, M.Lexicon(words))
    ix = {w: M.SPECIALS + k for k, w in enumerate(words)}
    assert data[0].ids == [M.STRING, ix["call"], ix["sorted"], M.UNKNOWN]
    assert data[-1].ids == [M.STRING, ix["~sort"], M.UNKNOWN]
    assert data[-1].stems == [M.UNKNOWN, ix["~sort"], M.UNKNOWN]


_TOOL_T = [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}]


def _sure_of(network: M.TinyCodemode, calls: int, schedule: tuple[float, ...], output: tuple[float, ...]) -> Planner:
    """A planner whose network tags tokens 1, 3, … (``calls`` of them) as calls and everything else as
    ``O``, with the given schedule and output logits: what the planner makes of how sure the network is."""
    planner = Planner(network)

    def forward(ids: torch.Tensor, feats: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, n = ids.shape
        tags = torch.full((b, n, len(M.TAGS)), -5.0)
        tags[:, :, M.TAGS.index("O")] = 5.0
        for k in range(calls):
            tags[:, 1 + 2 * k, M.TAGS.index("CALL")] = 9.0
        return tags, torch.tensor([schedule]).repeat(b, 1), torch.tensor([output]).repeat(b, 1)

    planner.forward = forward
    return planner


@pytest.mark.parametrize(("margin", "refused"), [(0.5, False), (planner_module.REJECT_MARGIN + 0.5, True)])
def test_a_request_is_refused_as_unsupported_only_when_the_network_is_sure(network: M.TinyCodemode, margin: float, refused: bool) -> None:
    """"Reject" must beat both schedules by ``REJECT_MARGIN`` logits; short of that the request is planned
    (and decoding and validation still refuse what makes no valid plan)."""
    planner = _sure_of(network, 1, (margin + 1.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    answer = planner.respond("call t", _TOOL_T)
    assert ("diagnostic" in answer) == refused
    if not refused:
        assert answer["plan"] == {"mode": "single", "calls": [{"tool": "t", "args": {}}], "output": {"kind": "last"}}


@pytest.mark.parametrize(("calls", "logits", "kind"), [
    (1, (planner_module.OUTPUT_MARGIN + 0.5, 0.0, 0.0), "all"),  # sure of "all": an array of one record
    (1, (planner_module.OUTPUT_MARGIN - 0.5, 0.0, 0.0), "last"),  # not sure: the default for one call
    (1, (1.0, 3.0, 0.0), "last"),
    (2, (planner_module.OUTPUT_MARGIN - 0.5, 0.0, 0.0), "all"),  # the default for several calls is "all" anyway
    (2, (0.0, 3.0, 1.0), "last"),
    (2, (1.0, 0.0, 3.0), "all"),
])
def test_the_output_kind_all_is_taken_for_one_call_only_when_the_network_is_sure(
        network: M.TinyCodemode, calls: int, logits: tuple[float, float, float], kind: str) -> None:
    planner = _sure_of(network, calls, (0.0, 1.0, 0.0), logits)
    answer = planner.respond("call t and t" if calls == 2 else "call t", _TOOL_T)
    assert answer["plan"]["output"] == {"kind": kind}


@pytest.mark.parametrize(("logits", "mode"), [
    ((0.0, 1.0, 1.0 + planner_module.PARALLEL_MARGIN + 0.25), "parallel"),  # sure of parallel
    ((0.0, 1.0, 1.0 + planner_module.PARALLEL_MARGIN - 0.25), "sequential"),  # not sure: the default
    ((0.0, 2.0, 1.0), "sequential"),
])
def test_several_calls_run_in_parallel_only_when_the_network_is_sure(
        network: M.TinyCodemode, logits: tuple[float, float, float], mode: str) -> None:
    """Several calls said with no schedule run one after another (the contract's default): "parallel"
    must beat "sequential" by ``PARALLEL_MARGIN`` logits."""
    planner = _sure_of(network, 2, logits, (0.0, 0.0, 1.0))
    assert planner.respond("call t and t", _TOOL_T)["plan"]["mode"] == mode


def test_a_model_trained_from_the_grammar_keeps_its_lexicon_through_save_and_load(tmp_path: object) -> None:
    """``codemode train`` end to end on a few examples and three hand-written cases: the lexicon is made from
    the training texts of both (never the stand-ins for unseen words), saved with the weights, and the loaded
    network reads words as the trained one did."""
    import io

    from conformance import training
    from strategies._internal.vocabulary import UNSEEN

    tool = {"name": "get_quote", "arguments": {"symbol": "string"}, "required": ["symbol"],
            "returns": {"kind": "object", "properties": ["price"]}}
    hand = Path(str(tmp_path)) / "hand.jsonl"
    hand.write_text("".join(json.dumps({
        "family": "single", "instruction": f'zorblat {n}: get_quote symbol "{s}"', "tools": [tool],
        "expect": {"plan": {"mode": "single", "calls": [{"tool": "get_quote", "args": {"symbol": s}}],
                            "output": {"kind": "last"}}}}) + "\n" for n, s in enumerate("ABC")))
    out = str(tmp_path) + "/tiny.pt"  # type: ignore[operator]
    log = io.StringIO()
    trained = training.train(examples=300, epochs=1, workers=1, out=out, hand=[hand], log=log)
    assert "hand-written cases: 3 used" in log.getvalue()
    words = trained.config.words
    assert "call" in words and not {w.lower() for w in UNSEEN} & set(words)
    assert "zorblat" in words  # a word of the hand-written cases alone, in three of them
    assert list(words) == sorted(words) and any(w.startswith("~") for w in words)
    loaded = M.load(out)
    assert loaded.config.words == words and loaded.lexicon.index == trained.lexicon.index
    answer = Planner(loaded).respond("call t", [{"name": "t", "arguments": {}, "required": [], "returns": {"kind": "text"}}])
    assert "plan" in answer or "diagnostic" in answer


def test_an_argument_typed_differently_by_two_tools_has_the_same_features_in_any_catalog_order() -> None:
    """Where no tool beside it declares it, an argument name carries the types of every tool that does, not
    the first one's: a permuted catalog is the same request (PL-INVARIANT holds by construction)."""
    from reference.catalog import Catalog

    def tool(name: str, kind: str) -> dict[str, object]:
        return {"name": name, "arguments": {"orders": kind}, "required": [], "returns": {"kind": "text"}}

    a = Catalog.from_json([tool("list_users", "string"), tool("get_users", "number"), tool("ping", "boolean")])
    b = Catalog.from_json([tool("ping", "boolean"), tool("get_users", "number"), tool("list_users", "string")])
    tokens = lex("orders , call ping").tokens
    lexicon = M.Lexicon(())
    assert M.featurize(tokens, a, lexicon) == M.featurize(tokens, b, lexicon)
    tokens = lex("say orders and nothing else").tokens
    assert M.featurize(tokens, a, lexicon) == M.featurize(tokens, b, lexicon)
