"""Search and scores against brute force over every sequence and the notes' formulas by hand."""
import itertools
import math

import pytest
import torch

from engine.decoding.penalties import Scoring, cp, ep, eq40_matrices, figure_1, lp, lp_star
from engine.decoding.ranking import ranked_hypotheses, winners
from engine.decoding.search import MAX_EXPANSIONS, Pruning, search
from engine.errors import InputError

EOS = 0


class ToyModel:
    """Log-probabilities fixed by a hash of the prefix: a model no search can guess, over N tokens."""

    bos, eos, source_length = -1, EOS, 0

    def __init__(self, vocab_size: int = 3, seed: int = 0):
        self.vocab_size, self.seed = vocab_size, seed

    def log_probs(self, prefix: tuple[int, ...]) -> torch.Tensor:
        g = torch.Generator().manual_seed(hash((self.seed,) + prefix) % 2**31)
        return torch.log_softmax(2 * torch.randn(self.vocab_size, generator=g), 0)

    def start(self) -> None:
        self.prefixes = [()]

    def step(self, last, parents):
        if self.prefixes == [()] and last.tolist() == [self.bos]:
            self.prefixes = [()]
        else:
            self.prefixes = [self.prefixes[p] + (int(t),) for p, t in zip(parents.tolist(), last.tolist())]
        return torch.stack([self.log_probs(p) for p in self.prefixes]), None


def brute_force_best(model: ToyModel, max_len: int) -> tuple[tuple[int, ...], float]:
    """argmax of log P over every sequence that ends with EOS or reaches max_len (eq. 28)."""
    best, best_score = None, -math.inf
    for length in range(1, max_len + 1):
        for seq in itertools.product(range(model.vocab_size), repeat=length):
            if EOS in seq[:-1] or (length < max_len and seq[-1] != EOS):
                continue
            score = sum(float(model.log_probs(seq[:t])[tok]) for t, tok in enumerate(seq))
            if score > best_score:
                best, best_score = seq, score
    return best, best_score


def best_raw(tree):
    node = max(tree.finished, key=lambda n: n.cum_log_p)
    return tuple(tree.tokens(node.id)), node.cum_log_p


@pytest.mark.parametrize("seed", range(4))
def test_exhaustive_equals_the_argmax_over_all_sequences(seed):
    model = ToyModel(3, seed)
    expected, score = brute_force_best(model, 5)
    found, found_score = best_raw(search(model, "exhaustive", 0, 5))
    assert found == expected and found_score == pytest.approx(score, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_beam_of_width_one_is_greedy_and_a_full_beam_is_exhaustive(seed):
    model = ToyModel(3, seed)
    greedy, beam1 = search(model, "greedy", 1, 6), search(model, "beam", 1, 6)
    assert [tuple(greedy.tokens(n.id)) for n in greedy.finished] == [tuple(beam1.tokens(n.id)) for n in beam1.finished]
    prefix, tokens = (), []
    for _ in range(6):  # greedy by hand: the best next token each time (eq. 29)
        token = int(model.log_probs(prefix).argmax())
        tokens.append(token)
        prefix += (token,)
        if token == EOS:
            break
    assert tuple(greedy.tokens(greedy.finished[0].id)) == tuple(tokens)
    full = search(model, "beam", 3, 4)  # W = N: every prefix survives, as in exhaustive search
    assert best_raw(full) == best_raw(search(model, "exhaustive", 0, 4))


def test_search_tree_marks_kept_pruned_and_finished():
    tree = search(ToyModel(4, 1), "beam", 2, 5)
    statuses = {n.status for n in tree.nodes[1:]}
    assert statuses <= {"kept", "pruned", "finished"} and "pruned" in statuses and tree.finished
    for depth in range(1, 6):  # at most W survivors (kept or finished) per depth
        assert sum(n.status != "pruned" for n in tree.nodes if n.depth == depth) <= 2


@pytest.mark.parametrize("method,width,max_len,message", [
    ("beam", 0, 5, "at least 1"), ("beam", 9, 5, "wider than the vocabulary"), ("greedy", 1, 0, "maximum length"),
    ("exhaustive", 0, 20, "would expand"),
])
def test_bad_settings_are_refused(method, width, max_len, message):
    with pytest.raises(InputError, match=message):
        search(ToyModel(4), method, width, max_len)
    assert MAX_EXPANSIONS >= 100_000


def test_penalties_by_hand():
    assert lp(1, 0.6) == pytest.approx(1.0)
    assert lp(10, 0.6) == pytest.approx((15 / 6) ** 0.6)
    assert lp_star(10, 0.6) == pytest.approx(10 ** 0.6)
    assert ep(6, 4, 0.5) == pytest.approx(0.75)
    a = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]])
    assert cp(a, 0.2) == pytest.approx(0.2 * (math.log(0.7) + math.log(0.7) + math.log(0.6)))
    curves = figure_1([0.5], 3)
    assert curves["lp, α = 0.5"] == pytest.approx([1.0, (7 / 6) ** 0.5, (8 / 6) ** 0.5])
    assert curves["lp*, α = 0.5"] == pytest.approx([1.0, 2 ** 0.5, 3 ** 0.5])


def test_eq40_matrices_give_the_least_and_the_most_coverage():
    matrices = eq40_matrices()
    assert cp(matrices["minimised cp"], 1.0) == -math.inf  # two source words never attended: log 0
    assert cp(matrices["maximised cp"], 1.0) == 0.0  # every column sums to 1: log 1 = 0, the maximum
    with pytest.raises(InputError):
        Scoring(alpha=-0.1)


def test_with_no_penalties_every_rule_is_the_raw_log_probability():
    tree = search(ToyModel(3, 2), "exhaustive", 0, 4)
    found = ranked_hypotheses(tree, Scoring(0, 0, 0), source_length=4)
    for h in found:
        assert h.terms["mean"] == h.terms["gnmt"] == h.terms["gnmt_star"] == h.terms["raw"]
    assert len(set(winners(found).values())) == 1


@pytest.mark.parametrize("method, width, max_len", [("exhaustive", 0, 3), ("beam", 6, 20)])
def test_ranking_scores_each_hypothesis_as_its_own_attention_matrix_does(method, width, max_len):
    # ranking sums the coverage of all hypotheses at once, depth by depth; the reference is eq. 37 over each
    # hypothesis' own matrix (terms() with cp of tree.attention), which sums its rows in another order
    stepper, scoring = _date_stepper("dot"), Scoring(0.6, 0.5, 0.3)
    tree = search(stepper, method, width, max_len, pruned_shown=None)
    reference = {n.id: scoring.terms(n.cum_log_p, n.depth, tree.attention(n.id), stepper.source_length)
                 for n in tree.finished}
    found = ranked_hypotheses(tree, scoring, stepper.source_length)
    assert len(found) == len(reference) > 10
    for h in found:
        assert h.terms.keys() == reference[h.node].keys() and h.tokens == tree.tokens(h.node)
        for term, value in reference[h.node].items():
            assert h.terms[term] == pytest.approx(value, rel=1e-12, abs=1e-12), term
    for rule in ("raw", "mean", "gnmt", "gnmt_star"):
        assert [h.node for h in sorted(found, key=lambda h: h.rank[rule])] == \
            sorted(reference, key=lambda node: -reference[node][rule])


def test_the_most_likely_prefixes_form_a_tree_of_their_own():
    tree = search(ToyModel(3, 5), "exhaustive", 0, 5)
    drawn = tree.most_likely(40)
    ids = [n.id for n in drawn]
    assert len(drawn) == 40 and ids == sorted(ids)
    assert all(n.parent is None or n.parent in ids for n in drawn)  # every drawn prefix's parent drawn too
    assert min(n.cum_log_p for n in drawn) >= max(n.cum_log_p for n in tree.nodes if n.id not in ids)
    assert tree.most_likely(len(tree.nodes)) == tree.nodes


def test_length_normalisation_can_change_the_winner():
    # seed 10: the most likely finished sequence is EOS alone, and the rules disagree about it
    tree = search(ToyModel(3, 10), "exhaustive", 0, 5)
    found = ranked_hypotheses(tree, Scoring(alpha=2.0), source_length=1)
    chosen = {rule: tuple(tree.tokens(node)) for rule, node in winners(found).items()}
    # the rules by hand over every finished sequence: eq. 31, eq. 32 with |Y|^α, eq. 34 with eq. 35's lp
    finished = [(tuple(tree.tokens(n.id)), n.cum_log_p) for n in tree.finished]
    by_hand = {
        "raw": max(finished, key=lambda f: f[1])[0],
        "mean": max(finished, key=lambda f: f[1] / len(f[0]) ** 2.0)[0],
        "gnmt": max(finished, key=lambda f: f[1] / ((5 + len(f[0])) / 6) ** 2.0)[0],
    }
    assert {rule: chosen[rule] for rule in by_hand} == by_hand
    assert len(chosen["raw"]) == 1 and len(chosen["mean"]) > 1  # dividing by |Y|^α favours the longer output
    assert chosen["gnmt"] != chosen["mean"]  # eq. 35's (5 + |Y|) softens it: here too little to switch


def test_language_model_stepper_with_its_cache_equals_rereading_the_prefix():
    from engine.decoding.models import LanguageModelStepper
    from engine.transformer.model import load_checkpoint
    from engine.transformer.text import CharVocab
    from engine.transformer.train import CHECKPOINTS

    lm, extra = load_checkpoint(CHECKPOINTS / "char_causal.pt")
    vocab = CharVocab(extra["vocab"])
    prompt = vocab.encode("The government said")
    tree = search(LanguageModelStepper(lm, vocab, prompt), "greedy", 1, 25)
    found = tree.tokens(tree.finished[0].id)
    ids, expected = prompt, []
    with torch.no_grad():
        for _ in found:  # greedy by rereading the whole sequence, no cache
            token = int(lm(ids[None]).logits[0, -1].argmax())
            expected.append(token)
            ids = torch.cat([ids, torch.tensor([token])])
    assert found == expected
    beams = search(LanguageModelStepper(lm, vocab, prompt), "beam", 4, 6)
    for node in beams.finished:  # each beam's cumulative log P equals the uncached sum along its path
        seq, total = prompt, 0.0
        with torch.no_grad():
            for token in beams.tokens(node.id):
                total += float(torch.log_softmax(lm(seq[None]).logits[0, -1].float(), -1)[token])
                seq = torch.cat([seq, torch.tensor([token])])
        assert total == pytest.approx(node.cum_log_p, abs=1e-3)


def _date_stepper(name: str, text: str = "march 31, 1950 at 4 pm"):
    from engine.decoding.models import Seq2SeqStepper
    from engine.seq2seq.model import load_seq2seq
    from engine.seq2seq.train import CHECKPOINTS

    return Seq2SeqStepper(load_seq2seq(CHECKPOINTS / f"{name}.pt")[0], text)


def _shape(tree):
    return [(n.parent, n.token, n.status) for n in tree.nodes]


@pytest.mark.parametrize("rule", ["gnmt", "gnmt_star", "mean", "raw"])
def test_pruning_by_a_penalised_score_without_penalties_is_raw_pruning(rule):
    stepper = _date_stepper("dot")
    raw = search(stepper, "beam", 3, 12, pruned_shown=None)
    penalised = search(stepper, "beam", 3, 12, pruned_shown=None, pruning=Pruning(Scoring(0, 0, 0), rule))
    assert _shape(penalised) == _shape(raw)


def test_a_penalised_beam_keeps_the_best_prefixes_by_the_rule_scored_over_each_whole_path():
    # the reference: terms(), the finished-hypothesis score of 000 eq. 34-41, over every candidate's own path
    stepper, scoring, width = _date_stepper("dot"), Scoring(0.6, 0.5, 0.3), 2
    tree = search(stepper, "beam", width, 12, pruned_shown=None, pruning=Pruning(scoring, "gnmt"))
    for depth in range(1, max(n.depth for n in tree.nodes) + 1):
        candidates = [n for n in tree.nodes if n.depth == depth]
        by_path = {n.id: scoring.terms(n.cum_log_p, depth, tree.attention(n.id), stepper.source_length)["gnmt"]
                   for n in candidates}
        for n in candidates:
            assert n.score == pytest.approx(by_path[n.id], abs=1e-6)
        best = sorted(by_path, key=by_path.get, reverse=True)[:width]
        assert {n.id for n in candidates if n.status != "pruned"} == set(best)
    raw = search(stepper, "beam", width, 12, pruned_shown=None)
    assert _shape(raw) != _shape(tree)  # on this input the coverage term changes which prefixes survive
    finished = lambda t: {tuple(t.tokens(n.id)) for n in t.finished}  # noqa: E731
    assert finished(raw) != finished(tree)


def test_a_language_model_has_no_coverage_so_penalised_pruning_changes_nothing():
    model = ToyModel(4, 3)
    raw = search(model, "beam", 3, 6, pruned_shown=None)
    penalised = search(model, "beam", 3, 6, pruned_shown=None, pruning=Pruning(Scoring(1.5, 1.0, 0.5), "gnmt"))
    assert _shape(penalised) == _shape(raw)
