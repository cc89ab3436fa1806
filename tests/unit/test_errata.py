"""Each place the notes err or disagree, its numbers against a computation written out here."""
import math
import os
import re
from pathlib import Path

import pytest
import torch

from engine import errata
from engine.llm.model import GGUF_PAIRING
from engine.seq2seq.dates import Example, batch
from engine.seq2seq.decode import rescored_attention, translate
from engine.seq2seq.model import load_seq2seq
from engine.seq2seq.train import CHECKPOINTS


def rotate(x: list[float], angle: float) -> list[float]:
    return [x[0] * math.cos(angle) - x[1] * math.sin(angle), x[0] * math.sin(angle) + x[1] * math.cos(angle)]


def test_eq_109s_row_form_turns_the_other_way():
    finding = errata.rope_row_vector(math.pi / 6)
    printed, holds = finding.rows["q = (1, 0), θ = 30°"]
    c, s = math.cos(math.pi / 6), math.sin(math.pi / 6)
    assert printed == f"q R = ({c:.4g}, {-s:.4g})"  # [1 0] [[c, −s], [s, c]] = [c, −s]
    assert holds == f"R q = q Rᵀ = ({c:.4g}, {s:.4g})"
    assert finding.rows["the engine's RoPE of q at angle θ"][1] == f"({c:.4g}, {s:.4g})"
    # eq. 109 prints t/θ² for every pair; pair i turns by t · base^(−2i/d): d = 4, base 100000, t = 1
    assert finding.rows["angles of the pairs at t = 1"] == (f"({1e5 ** -0.5:.4g}, {1e5 ** -0.5:.4g})",
                                                            f"(1, {1e5 ** -0.5:.4g})")
    ends = errata.rotation_of_the_row_form(math.pi / 6)
    assert list(ends.values()) == [(1.0, 0.0), tuple(rotate([1, 0], math.pi / 6)), tuple(rotate([1, 0], -math.pi / 6))]


def test_eq_95_caches_every_heads_absorbed_query():
    finding = errata.mla_query_cache(4, 16, 8)
    assert list(finding.rows.values()) == [("80", "24"), ("66,048", "576")]  # 4·16 + 16 against 16 + 8


def test_001s_printed_frequencies_are_the_reciprocal_shifted_by_one():
    printed, holds = errata.rope_frequency_formula(8).rows["θ_1 … θ_4"]
    assert printed == "(10, 100, 1000, 1e+04)"
    assert holds == "(1, 0.1, 0.01, 0.001)"  # 10000^(−2(i−1)/8), i = 1..4


def rope_by_hand(x: list[float], position: int, base: float, pairs: list[tuple[int, int]]) -> list[float]:
    out = list(x)
    for i, (a, b) in enumerate(pairs):
        out[a], out[b] = rotate([x[a], x[b]], position / base ** (2 * i / len(x)))
    return out


@pytest.mark.parametrize("pairing, pairs", [("interleaved", [(0, 1), (2, 3)]), ("half", [(0, 2), (1, 3)])])
def test_the_base_and_the_pairing_change_the_score(pairing, pairs):
    row = errata.rope_base_and_pairing().rows[f"q·k, {pairing} pairs"]
    for base, shown in zip((1e4, 1e5), row):
        q = rope_by_hand([1, 2, 3, 4], 1, base, pairs)
        k = rope_by_hand([5, 6, 7, 8], 2, base, pairs)
        assert shown == f"{sum(a * b for a, b in zip(q, k)):.6f}"
    assert row[0] != row[1]


def test_003_drops_gpts_lambda():
    finding = errata.gpt_objective_names(2.0, 0.5, 0.5, "illustrative")
    assert finding.rows["L3"] == ("L1 + L2 = 2.5000", "L2 + 0.5 L1 = 1.5000")


def test_the_additive_models_bias_and_what_dropping_it_does():
    model, _ = load_seq2seq(CHECKPOINTS / "additive.pt")
    result = translate(model, "the 3rd of march 2021")
    without = rescored_attention(model, result, result.queries, query_bias=False)
    with torch.no_grad():  # eq. 47 as printed, by hand: vᵀ tanh(W1 s + W2 z), no bias
        memory, _ = model.encode(batch([Example(result.source, "")])[0])
        W1, W2, v = model.W_query.weight, model.W_key.weight, model.v.weight[0]
        scores = torch.tanh((result.queries @ W1.T)[:, None, :] + (memory.z[0] @ W2.T)[None]) @ v  # (T, S)
    torch.testing.assert_close(without, torch.softmax(scores, 1), atol=1e-5, rtol=1e-4)
    assert (without - result.attention).abs().max() > 1e-3  # the bias matters
    bias = model.W_query.bias.detach()
    finding = errata.additive_bias(float(bias.norm()), bias.numel(), float((without - result.attention).abs().max()))
    assert finding.rows["bias inside the tanh"][1].startswith(f"b with {bias.numel()} entries")


def test_the_query_of_eq_42_against_001s():
    model, _ = load_seq2seq(CHECKPOINTS / "dot.pt")
    result = translate(model, "the 3rd of march 2021")
    torch.testing.assert_close(rescored_attention(model, result, result.queries), result.attention)  # as trained
    with torch.no_grad():
        memory, _ = model.encode(batch([Example(result.source, "")])[0])
    by_hand = torch.softmax(result.states @ memory.z[0].T, 1)  # eq. 42 with the step's own state: softmax_j h_t·z_j
    current = rescored_attention(model, result, result.states)
    torch.testing.assert_close(current, by_hand, atol=1e-5, rtol=1e-4)
    finding = errata.bahdanau_query(result.attention, current, result.source, 4)
    j, k = int(result.attention[4].argmax()), int(current[4].argmax())
    assert finding.rows["step 4: the character weighted most"] == (
        f"{j} ‘{result.source[j]}’, a = {float(result.attention[4, j]):.3f}",
        f"{k} ‘{result.source[k]}’, a = {float(current[4, k]):.3f}")
    assert finding.rows["largest difference of a weight, all steps"][1] == \
        f"{float((result.attention - current).abs().max()):.4f}"


def test_002s_worked_example_against_its_own_exponentials():
    e = [math.exp(0.5), math.exp(0.2), math.exp(0.7)]  # s·h_j for s = (0.5, 0.2), h = (1, 0), (0, 1), (1, 1)
    weights = [x / sum(e) for x in e]
    context = [weights[0] + weights[2], weights[1] + weights[2]]
    rows = errata.worked_example_002().rows
    assert [computed for _, computed in rows.values()] == [f"{x:.4f}" for x in weights + context]
    assert [printed for printed, _ in rows.values()] == ["0.3374", "0.2501", "0.4125", "0.7499", "0.6626"]
    assert [p == c for p, c in rows.values()] == [False, True, False, True, False]


def test_eq_137s_printed_rescaling_against_softmax():
    rows = errata.online_rescaling([1.0, 3.0, 2.0]).rows
    e = [math.exp(v) for v in (1.0, 3.0, 2.0)]
    softmax = f"({', '.join(f'{v / sum(e):.4g}' for v in e)})"
    assert rows["o_N"][1] == rows["softmax(x) directly"][1] == softmax
    # as printed, o_1 = 1 is moved from m = 1 to m = 3 by e^{+2} instead of e^{−2}: its weight is e^4 too large
    assert rows["o_N"][0].startswith(f"({e[0] / sum(e) * math.exp(4):.4g},")
    total = (e[0] * math.exp(4) + e[1] + e[2]) / sum(e)
    assert rows["Σ of o_N's entries (softmax weights sum to 1)"] == (f"{total:.4g}", "1")


def test_glove_biases_compare_the_two_shipped_checkpoints_as_stored():
    from engine.embeddings.train_glove import CHECKPOINTS as GLOVE

    stored = {name: torch.load(GLOVE / f"{name}.pt", weights_only=True)
              for name in ("glove_wikipedia_nobias", "glove_wikipedia")}
    finding = errata.glove_biases(stored["glove_wikipedia_nobias"], stored["glove_wikipedia"])
    assert finding.kind == "disagreement" and finding.page == "glove_training"
    eq_19, paper = finding.rows["J per nonzero X_ij, last epoch"]
    assert float(eq_19) == pytest.approx(stored["glove_wikipedia_nobias"]["losses"][-1], abs=5e-5)
    assert float(paper) == pytest.approx(stored["glove_wikipedia"]["losses"][-1], abs=5e-5)
    assert {stored[n]["config"]["biases"] for n in stored} == {False, True}
    assert {k: v for k, v in stored["glove_wikipedia"]["config"].items() if k != "biases"} == {
        k: v for k, v in stored["glove_wikipedia_nobias"]["config"].items() if k != "biases"}  # alike but for biases
    rho = finding.rows["WordSim-353 Spearman ρ"]
    assert rho == tuple(f"{stored[n]['metrics']['wordsim353_spearman']:.3f}" for n in stored)


NOTES = Path(__file__).resolve().parents[3] / "shared" / "seeds"  # the lecture notes, beside the checkout


@pytest.fixture
def notes() -> Path:
    """The lecture notes: beside the project's checkout in its own layout and in CI; a clone elsewhere has none,
    and skips what reads them (nothing else in the project does), except under CI=true, where they must be there."""
    if not NOTES.is_dir():
        missing = f"the lecture notes are missing at {NOTES}"
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(f"{missing} (a clone outside the project's layout)")
    return NOTES


TAG = r"(?:\\tag\{(\d+)\}|\\quad \((\d+)\))"  # how the notes number a display equation


def numbered_equations(notes: Path, code: str) -> dict[int, str]:
    """A note's numbered display equations, number -> body with layout (spaces, \\left, \\right, colour) removed,
    so the same equation printed in two notes compares equal."""
    text = next(notes.glob(f"{code}_*.txt")).read_text()
    found = {}
    for block in re.findall(r"\$\$(.*?)\$\$", text, re.S):
        number = re.search(TAG + r"\s*$", block.strip())
        if number:
            body = re.sub(TAG + r"\s*$", "", block.strip())
            body = re.sub(r"\\textcolor\{\w+\}\{([^{}]*)\}", r"\1", body)
            found[int(number.group(1) or number.group(2))] = re.sub(r"\s+|\\left|\\right", "", body)
    return found


def cited(where: str, code: str) -> set[int]:
    """The equations of note `code` that an erratum's `where` names: "000 eq. 95 against eq. 120-121; 004 …"."""
    numbers = set()
    for part in where.split(";"):
        if part.strip().startswith(code):
            for first, last in re.findall(r"eq\. (\d+)(?:-(\d+))?", part):
                numbers.update(range(int(first), int(last or first) + 1))
    return numbers


def every_finding() -> list[errata.Erratum]:
    """Each finding, those that take a trained model's numbers given made-up ones (only `where` is read)."""
    stored = {"losses": [0.1], "metrics": {"analogy_accuracy": 0.1, "wordsim353_spearman": 0.2,
                                           "simlex999_spearman": 0.3}}
    attention = torch.full((3, 4), 0.25)
    return [errata.rope_row_vector(), errata.mla_query_cache(4, 16, 8), errata.rope_frequency_formula(),
            errata.rope_base_and_pairing(), errata.gpt_objective_names(1.0, 2.0, 0.5, "made up"),
            errata.additive_bias(1.0, 4, 0.1), errata.bahdanau_query(attention, attention, "abcd", 1),
            errata.worked_example_002(), errata.online_rescaling(), errata.glove_biases(stored, stored)]


def test_each_erratum_names_every_note_that_prints_the_same_equation(notes):
    in_000, in_004 = numbered_equations(notes, "000"), numbered_equations(notes, "004")
    number_in_004 = {body: n for n, body in in_004.items()}
    repeats = 0
    for finding in every_finding():
        for n in cited(finding.where, "000"):
            twin = number_in_004.get(in_000[n])
            if twin is not None:
                repeats += 1
                assert twin in cited(finding.where, "004"), f"{finding.key}: 000 eq. {n} is 004 eq. {twin} too"
    assert repeats >= 6  # eq. 109, 95, 120, 121, 136 and 137 are all printed again in 004


def test_the_rope_findings_give_each_note_whose_code_sets_base_100000_that_base(notes):
    pairing, frequencies = errata.rope_base_and_pairing(), errata.rope_frequency_formula()
    setting = [path.name[:3] for path in sorted(notes.glob("00*.txt"))
               if re.search(r"rope_theta\s*=\s*100000\b", path.read_text())]
    assert setting == ["000", "004"]
    for code in setting:
        assert code in pairing.where and f"{code}'s" in pairing.columns[1], code
        assert re.search(f"{code}'s[^.;:]*100000", frequencies.text), code  # not listed among the 10000s


def test_the_pairing_finding_names_who_uses_rotate_half_and_who_keeps_pairs():
    text = errata.rope_base_and_pairing().text
    assert "rotate_half layout of Hugging Face transformers' Llama" in text
    assert f"GGUF files keep {GGUF_PAIRING} pairs" in text  # the layout our SmolLM2 reads from its GGUF
