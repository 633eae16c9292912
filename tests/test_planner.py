"""The reference planner's answers do not depend on how requests are batched or sharded; a batch pauses
the cyclic garbage collector and turns oneDNN off, runs the network on the planner's intra-op threads
(one by default), and leaves all three as they were."""

from __future__ import annotations

import gc

import pytest

torch = pytest.importorskip("torch")  # the planner needs the [planner] extra; without it, nothing to test

from reference import model as M  # noqa: E402
from reference.lexer import lex  # noqa: E402
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
            rows.append(M.featurize(lexed.tokens, item.catalog, network.config.buckets))
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
    ids, codes = M.featurize(tokens, catalog, 4096)
    assert ids[1] == M.word_id("\u2118", 4096)
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
    ids, codes = M.featurize(lex(f"call t {long} please").tokens, catalog, 4096)
    assert ids[2] == M.word_id(long, 4096) and codes[2] & (1 << 23)  # its identity, and a capital
    assert long not in M._KNOWN[4096] and "please" in M._KNOWN[4096]
