import math
from functools import partial

import pyarrow as pa
import streamlit as st

from engine.decoding.models import LanguageModelStepper, Seq2SeqStepper, SmolLMStepper
from engine.decoding.penalties import RULES, Scoring, cp, eq40_matrices, figure_1
from engine.decoding.ranking import ranked_hypotheses, winners, winning_outputs
from engine.decoding.search import Pruning, search
from engine.decoding.study import search_error_study
from engine.llm import generation
from engine.llm.smollm import load as load_smollm
from engine.seq2seq.dates import distracted_examples
from engine.seq2seq.model import load_shipped_seq2seq
from engine.transformer.train import load_lm
from ui import figures, llm, tables
from ui.defaults import STUDY_MODEL, STUDY_SEED, STUDY_WIDTHS, error_study
from ui.llm import SEARCH_PROMPT_TOKENS, SEARCH_WIDEST
from ui.loaders import char_model, decoding_search, distracted_dates, prompt_ids, searched_width, seq2seq_checkpoint
from ui.page import Page, equations
from ui.seq2seq import LABEL_KEY, SYMBOLS, attention_heatmap
from ui.smollm import smollm

MODELS = ["additive", "additive_coverage", "dot", "lm", "smollm"]
# tree nodes drawn at most: an exhaustive search of four steps has 44,000, a 26 MB figure that took the server 2 s
# to send and no one can read; the widest beam here has under 5,000
DRAWN = 5_000
DEFAULT_TEXT = "march 31, 1950 at 4 pm"  # the rules disagree on it, and the coverage penalty finds the answer
RULE_NAMES = {"raw": "log P", "mean": "log P / |Y|^α", "gnmt": "GNMT: log P / lp + cp + ep",
              "gnmt_star": "log P / lp* + cp + ep"}
PRUNINGS = {"log P": None, "GNMT score": "gnmt"}  # what the beam keeps at every step
SEARCH_NOTES = {"beam": "000 eq. 30: beam search keeps the W most probable prefixes (eq. 31) at every depth; "
                        "the tree also holds the best 2W it pruned",
                "greedy": "000 eq. 29: greedy search keeps the one most probable token at every step; the tree "
                          "also holds the best 2W it pruned",
                "exhaustive": "000 eq. 27-28: exhaustive search expands every prefix, N^T of them"}


def _hover(node, hypothesis, model, tree) -> str:
    """Every term of a node: its token's and prefix's log-probabilities and, when finished, each score."""
    lines = [f"“{model.text(tree.tokens(node.id))}”", f"log p(token) = {node.log_p:.4f}",
             f"log P(prefix) = {node.cum_log_p:.4f}", f"pruned by: {node.score:.4f}",
             f"depth {node.depth}, {node.status}"]
    if hypothesis is not None:
        t = hypothesis.terms
        lines += [f"lp = {t['lp']:.4f}, lp* = {t['lp_star']:.4f}, cp = {t['cp']:.4f}, ep = {t['ep']:.4f}"]
        lines += [f"{RULE_NAMES[r]} = {t[r]:.4f} (rank {hypothesis.rank[r]})" for r in RULES]
    return "<br>".join(lines)


page = Page("decoding_lab")
page.intro(
    "Search for the output a model finds most probable (000 eq. 27). Exhaustive search keeps every branch "
    "(N^T of them), greedy keeps one, beam search keeps the W best at every depth (eq. 30). Every node the "
    "search expanded is drawn; pruned ones are faded. Finished hypotheses are then ranked by raw log P and "
    "by the normalised scores of §6.2-6.4. Models: the seq2seq date normalisers (with attention, so the "
    "coverage penalty applies), the character TransformerLM continuing a prompt, or SmolLM2-135M-Instruct "
    "answering it as a chat question."
)
c1, c2, c3 = st.columns([1, 3, 1])
name = page.select("Model", "model", MODELS, where=c1,
                   help="additive, additive_coverage, dot: the date models; lm: the character TransformerLM; smollm: "
                        "SmolLM2-135M-Instruct, a real Llama model, over its 49,152 tokens")
text = page.text("Input (a date) or prompt (lm, smollm)", "text", DEFAULT_TEXT, max_chars=200, where=c2)
method = page.select("Search", "method", ["beam", "greedy", "exhaustive"], where=c3)
c1, c2, c3, c4, c5, c6 = st.columns(6)
# a beam wider than the output vocabulary (15 tokens for a date model) only errors; SmolLM2's is kept quick
widest = {"lm": 16, "smollm": SEARCH_WIDEST}.get(name) or seq2seq_checkpoint(name)[0].output_size
width = page.slider("Beam width W", "W", 1, widest, 4, where=c1)
max_len = page.slider("Maximum length T", "T", 1, 30, 12, where=c2)
alpha = page.slider("α (length)", "alpha", 0.0, 2.0, 0.6, 0.1, where=c3)
beta = page.slider("β (coverage)", "beta", 0.0, 1.0, 0.2, 0.05, where=c4)
gamma = page.slider("γ (length ratio)", "gamma", 0.0, 1.0, 0.0, 0.05, where=c5)
prune_by = page.select("Prune beams by", "prune", list(PRUNINGS), where=c6,
                       help="log P: the penalties only rank finished hypotheses. GNMT score: every step's beam "
                            "is chosen by log P / lp + cp + ep of the prefixes, as GNMT's decoder scores its beams")
code = page.code


def stepper_for(name: str):
    """The model the search extends prefixes of: a seq2seq date model reading the text, the character LM
    continuing it, or SmolLM2 answering it as a chat question; None when SmolLM2's file is missing (ui.smollm
    says how to fetch it)."""
    if name == "lm":
        model, vocab, _ = code.call("lm, vocab, record", load_lm, "causal", via=char_model)
        _, prompt = prompt_ids(page, text, vocab, limit=200)  # the last 200 characters, said on the page
        ids = code.call("ids", vocab.encode, prompt)
        return code.call("stepper", LanguageModelStepper, model, vocab, ids, note="the prompt is read once")
    if name == "smollm":
        if (lm := smollm()) is None:
            return None
        code.call("lm", load_smollm, via=lambda: lm)
        llm.prompt_ids(page, lm, text, SEARCH_PROMPT_TOKENS, chat=True)  # says on the page what was cut
        ids, _ = code.call("ids, cut", generation.prompt_ids, lm, text, chat=True, limit=SEARCH_PROMPT_TOKENS,
                           note="the text as a user's question in the chat template")
        return code.call("stepper", SmolLMStepper, lm, ids)
    model, _ = code.call("seq2seq, record", load_shipped_seq2seq, name, via=seq2seq_checkpoint)
    return code.call("stepper", Seq2SeqStepper, model, text, note="the source is encoded once")


# 16 settings: an exhaustive search's tree has up to 200,000 nodes (search.MAX_EXPANSIONS)
@st.cache_resource(max_entries=16, show_spinner=False)
def ranked(settings: tuple, _tree, _scoring: Scoring, _model) -> tuple[list, dict, dict]:
    """A search's finished hypotheses ranked by every rule, each rule's winner and its output, once per server for
    each of the page's settings (which fix the tree and the scoring), shared read-only: ranking scores every
    finished node, and ranking again on every run was 8% of the server's time under a class of 100."""
    found = ranked_hypotheses(_tree, _scoring, source_length=_model.source_length)
    best = winners(found)
    return found, best, winning_outputs(_model, _tree, best)


@st.cache_resource(max_entries=16, show_spinner=False)
def tree_nodes(settings: tuple, _tree, _found: list, _model) -> list[figures.TreeNode]:
    """The drawn tree's nodes with their hover texts, once per server for each setting, shared read-only: at most
    DRAWN of them, the most likely prefixes."""
    finished = {h.node: h for h in _found}
    return [figures.TreeNode(str(n.id), None if n.parent is None else str(n.parent),
                             "start" if n.parent is None else _model.label(n.token) if n.status != "pruned" else "",
                             _hover(n, finished.get(n.id), _model, _tree), n.cum_log_p, faded=n.status == "pruned")
            for n in _tree.most_likely(DRAWN)]


@st.cache_resource(max_entries=16, show_spinner=False)
def hypotheses_table(settings: tuple, _found: list, _model) -> pa.Table:
    """Every finished hypothesis with its terms and ranks, once per server for each setting, shared read-only: an
    exhaustive search of four steps finishes 41,000, whose columns took a tenth of a second to build at every run."""
    return pa.table({"hypothesis": [_model.text(h.tokens) for h in _found], "|Y|": [h.terms["length"] for h in _found],
                     **{RULE_NAMES[r]: [round(h.terms[r], 4) for h in _found] for r in RULES},
                     **{f"rank: {r}": [h.rank[r] for h in _found] for r in RULES},
                     "lp": [round(h.terms["lp"], 4) for h in _found], "cp": [round(h.terms["cp"], 4) for h in _found]})


def run_search(model, scoring: Scoring, pruning_name: str, shown: int | None, source_length: int, prefix: str = ""):
    """One search and its finished hypotheses ranked by every rule, recorded with names starting `prefix`."""
    rule = PRUNINGS[pruning_name]
    pruning = code.call(f"{prefix}pruning", Pruning, scoring, rule,
                        note="GNMT's pruning: every step's beam by its prefixes' scores") if rule else None
    tree = code.call(f"{prefix}tree", search, model, method, width=width, max_len=max_len, pruned_shown=shown,
                     pruning=pruning, via=partial(decoding_search, name, text), note=SEARCH_NOTES[method])
    found, best, outputs = ranked(search_settings(pruning_name), tree, scoring, model)
    code.call(f"{prefix}found", ranked_hypotheses, tree, scoring, source_length=source_length,
              via=lambda *_, **__: found, note="every finished hypothesis scored by each rule, ranked")
    code.call(f"{prefix}best", winners, found, via=lambda *_: best)
    code.call(f"{prefix}outputs", winning_outputs, model, tree, best, via=lambda *_: outputs,
              note="what each rule outputs")
    return tree, found, best, outputs


def search_settings(pruning_name: str) -> tuple:
    """Everything that fixes a search's tree and its ranking: the cache key of ranked and tree_nodes. Exhaustive
    search's tree is the same at every width (ui.loaders.searched_width), and so its ranking."""
    return name, text, method, searched_width(method, width), max_len, alpha, beta, gamma, pruning_name


def rule_outputs(model, scoring: Scoring, in_force: dict, shown: int | None, source_length: int) -> None:
    """What each rule outputs under the pruning in force and, for beam search, under the other one."""
    outputs = {prune_by: in_force}
    if method == "beam":
        other = next(p for p in PRUNINGS if p != prune_by)
        code.note(f"the same beam pruned by {other}")
        outputs[other] = run_search(model, scoring, other, shown, source_length, prefix="other_")[3]
    disagree = len(set(outputs[prune_by].values())) > 1
    st.markdown("**What each rule outputs**" + (" (they disagree)" if disagree else ""))
    tables.dataframe({"rule": [RULE_NAMES[r] for r in RULES],
                      **{f"beam pruned by {p}" + (" (in force)" if p == prune_by else ""):
                         [outputs[p][r] for r in RULES] for p in outputs}}, hide_index=True)
    st.caption(f"{SYMBOLS}{', ⏎ a new line' if name in ('lm', 'smollm') else ''}.")
    in_force = ("the beam keeps the W best prefixes by raw log P and the penalties only rank the finished "
                "hypotheses" if prune_by == "log P" else
                "the beam keeps the W best prefixes by log P / lp + cp + ep of each prefix, as GNMT's decoder "
                "scores its beams, and every rule then ranks the finished hypotheses")
    if method != "beam":
        compared = "Greedy search keeps one prefix and exhaustive search all of them, so the pruning changes nothing."
    elif len(outputs) == 2 and outputs[prune_by] != outputs[other]:
        compared = "**The two prunings return different winners here.**"
    else:
        compared = "Both prunings return the same winners here."
    st.caption(f"In force: {in_force}. |Y| counts the generated tokens, the end symbol ■ included. At one step "
               "every candidate has the same |Y|, so lp and ep shift them all alike and only cp (date models, "
               f"β > 0) can reorder them. {compared}")


def show_search(stepper) -> None:
    """The search tree, the rules' outputs, every finished hypothesis and the winner's attention."""
    scoring = code.call("scoring", Scoring, alpha, beta, gamma,
                        note="000 eq. 32, 34-37, 41: the strengths of the length, coverage and length-ratio terms")
    shown = None if method == "exhaustive" else 2 * max(width, 1)  # pruned candidates drawn per step
    tree, found, best, outputs = run_search(stepper, scoring, prune_by, shown, stepper.source_length)
    code.let("hypotheses", lambda: [stepper.text(h.tokens) for h in found])
    code.let("terms", lambda: [h.terms for h in found], note="log P, |Y|, lp, lp*, cp, ep and every rule's score")
    code.let("ranks", lambda: [h.rank for h in found])
    attention = code.let("attention", lambda: tree.attention(best["gnmt"]) if best else None,
                         note="the GNMT winner's attention (a date model's), and its coverage penalty (000 eq. 37)")
    winner_cp = code.call("winner_cp", cp, attention, beta) if attention is not None else None
    left, right = st.columns([3, 2])
    with left:
        nodes = tree_nodes(search_settings(prune_by), tree, found, stepper)
        drawn = "" if len(nodes) == len(tree.nodes) else f"; the {len(nodes):,} most likely drawn"
        figures.show(figures.tree(nodes, f"{method} search: {len(tree.nodes):,} nodes, {len(found)} finished{drawn}",
                                  colour_title="log P of prefix", steps=True))
        st.caption("The tree's own slider steps through the search: step t shows every prefix of at most t tokens "
                   "it expanded, the beam and what it dropped." + (
                       f" This tree is too large to draw whole (it would be tens of megabytes, and unreadable): it "
                       f"shows the {len(nodes):,} most likely prefixes, and the table below lists every finished "
                       "hypothesis." if drawn else ""))
    with right:
        n_x = stepper.source_length or "|X|"
        equations(
            ("000 eq. 34-35 with eq. 41, this page's values",
             rf"s = \frac{{\log P}}{{(5 + |Y|)^{{{alpha:g}}} / 6^{{{alpha:g}}}}} + \text{{cp}} "
             rf"+ {gamma:g}\,\frac{{|Y|}}{{{n_x}}}"),
            ("000 eq. 37", rf"\text{{cp}} = {beta:g} \sum_j \log\big(\min(\textstyle\sum_i a_{{ij}}, 1)\big)"),
            ("000 eq. 32", rf"\frac{{1}}{{|Y|^{{{alpha:g}}}}} \sum_t \log P(y_t \mid y_{{<t}}, x)"),
        )
        if best:
            rule_outputs(stepper, scoring, outputs, shown, stepper.source_length)
        if text == DEFAULT_TEXT and name == "additive" and prune_by == "log P":
            st.caption("On this input the model skips a digit: raw log P, and log P / |Y|^α, prefer the shorter "
                       "“195-03-31■”, which leaves a source character unread; GNMT's length and coverage penalties "
                       "together pick “1950-03-31■”. Set α or β to 0 to lose it, or W to 1: greedy search never "
                       "finds it.")
        if name == "smollm":
            st.caption("SmolLM2 reads the input as a user's question inside its chat template and answers it; ■ is "
                       "<|im_end|>, the end of its turn. Try “What is the capital of France?”. The beam is at most "
                       f"{SEARCH_WIDEST} wide: every step runs the 135M-parameter model once over all live prefixes.")
    st.subheader("Finished hypotheses, every rule side by side")
    tables.dataframe(hypotheses_table(search_settings(prune_by), found, stepper), hide_index=True)
    g1, g2 = st.columns(2)
    with g1:
        alphas = sorted({0.2, 0.6, 1.0, alpha})
        curves = figure_1(alphas, 50)
        figures.show(figures.lines(list(range(1, 51)), curves, title="000 Figure 1: lp against lp* over |Y|",
                                   x_title="|Y|", y_title="penalty", markers=False,
                                   dashed=[k for k in curves if k.startswith("lp*")]))
    with g2:
        if attention is not None:
            attention_heatmap(attention, stepper.source, outputs["gnmt"],
                              f"The GNMT winner's attention: cp = {winner_cp:.3f}")
            st.caption(LABEL_KEY)
        else:
            st.info("The language model reads no source, so it has no attention matrix and no coverage penalty.")


with page.guard():
    model = stepper_for(name)
    code.figure('px.bar(x=hypotheses, y=[t["gnmt"] for t in terms], labels={"x": "hypothesis", "y": "GNMT score"}, '
                'title="Every finished hypothesis, scored by log P / lp + cp + ep")')
    if model is not None:  # None: SmolLM2's file is missing, and the page says how to fetch it
        show_search(model)
st.subheader("000 eq. 40: the two attention matrices of the coverage penalty")
for column, (title, matrix) in zip(st.columns(2), eq40_matrices().items()):
    with column:
        value = cp(matrix, beta if beta else 1.0)
        shown = "−∞" if math.isinf(value) else f"{value:.3f}"
        figures.show(figures.heatmap(matrix.numpy(), ["x1", "x2", "x3"], ["y1", "y2", "y3"],
                                     f"{title}: cp = {shown} (β = {beta if beta else 1.0:g})", height=260))

st.subheader("000 §6.1: search error or model error?")
study_model, _ = code.call("study_model, study_record", load_shipped_seq2seq, STUDY_MODEL, via=seq2seq_checkpoint,
                           note="000 §6.1: search error or model error, on held-out dates with a distraction")
study = code.call("study", search_error_study, study_model,
                  code.call("study_dates", distracted_examples, 30, STUDY_SEED, via=distracted_dates),
                  code.let("study_widths", lambda: STUDY_WIDTHS), length=3,
                  via=lambda *_, **__: error_study(STUDY_MODEL))
code.let("search_errors", lambda: study.search_error,
         note="share of dates where a beam of each width misses the best")
code.let("model_error", lambda: study.model_error, note="share where even the exhaustive best is wrong")
MODEL_ERROR = "model error: the exhaustive best is wrong"
figures.show(figures.lines(study.widths, {"search error: beam below the exhaustive best": study.search_error,
                                          MODEL_ERROR: [study.model_error] * len(study.widths)},
                           title=f"{study.n} held-out dates with a distraction, first 3 output characters, "
                                 f"{STUDY_MODEL} model",
                           x_title="beam width W", y_title="share of inputs", dashed=[MODEL_ERROR]))
st.caption("Exhaustive search over all 15³ three-character prefixes finds the sequence the model itself rates "
           "best; a beam that misses it makes a search error. When even that best is wrong, no search can help: "
           "the model is wrong. Here the search errors vanish already at small W and what remains is model error.")
