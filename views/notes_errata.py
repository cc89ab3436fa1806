import streamlit as st

from engine import errata
from engine.embeddings.train_glove import load_shipped_glove
from engine.positions.decoupled import MLAConfig
from engine.seq2seq.decode import translate
from engine.seq2seq.model import load_shipped_seq2seq
from engine.transformer.train import load_classifier
from ui import boundary, errata_panel, tables
from ui.catalog import BY_SLUG
from ui.loaders import finetuned_classifier, glove_checkpoint, seq2seq_checkpoint, translated
from ui.page import Page
from ui.seq2seq import DATE_EXAMPLE

BAHDANAU_STEP = 4  # the Encoder-decoder attention page's default step
page = Page("notes_errata")
page.intro(
    "The notes this app follows are mostly right, and where they are not it matters to a reader checking the "
    "app against them. Each finding below is computed by the engine, shown with its numbers on the page it "
    "concerns, and gathered here: errors (a formula or number that is false as printed) and disagreements "
    "(two notes choosing differently, where the pages let you choose)."
)
KINDS = {"every finding": ("error", "disagreement"), "errors": ("error",), "disagreements": ("disagreement",)}


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    shown = page.select("Show", "show", list(KINDS))

    mla = MLAConfig()  # the Decoupled RoPE page's defaults
    code = page.code
    dot = code.call("dot, dot_saved", load_shipped_seq2seq, "dot", via=seq2seq_checkpoint,
                    note="the trained models whose numbers some findings quote")[0]
    additive = code.call("additive, additive_saved", load_shipped_seq2seq, "additive", via=seq2seq_checkpoint)[0]
    fine_tuned = code.call("classifier, char_vocab, fine_tuned", load_classifier, via=finetuned_classifier)[2]
    metrics = code.let("metrics", lambda: fine_tuned['metrics'])
    L1, L2, lam = code.let("L1, L2, lam", lambda: (metrics['held_out_L1'], metrics['held_out_L2'], metrics['lambda']))
    nobias = code.call("nobias_vectors, nobias_saved", load_shipped_glove, "glove_wikipedia_nobias",
                       via=glove_checkpoint)[1]
    biased = code.call("bias_vectors, bias_saved", load_shipped_glove, "glove_wikipedia", via=glove_checkpoint)[1]
    with page.guard():
        dot_translation = code.call("dot_translation", translate, dot, DATE_EXAMPLE,
                                    via=lambda *_: translated("dot", DATE_EXAMPLE))
        additive_translation = code.call("additive_translation", translate, additive, DATE_EXAMPLE,
                                         via=lambda *_: translated("additive", DATE_EXAMPLE))
        code.note("each finding: what the notes print against what holds, computed")
        row_vector = code.call("row_vector", errata.rope_row_vector, note="000 eq. 109; 004 eq. 56")
        query_cache = code.call("query_cache", errata.mla_query_cache, mla.n_heads, mla.d_c, mla.d_h_rope,
                                note="000 eq. 95 against eq. 120-121, at MLAConfig()'s H, d_c and d_h^R")
        frequencies = code.call("frequencies", errata.rope_frequency_formula, note="001's RoPE appendix")
        base_and_pairing = code.call("base_and_pairing", errata.rope_base_and_pairing,
                                     note="000 §8.6 against 001 and 002")
        objective_names = code.call("objective_names", errata.gpt_objective_names, L1, L2, lam,
                                    "the fine-tuned character model's mean losses on 400 held-out snippets",
                                    note="003 eq. 65-70")
        which_query = code.call("which_query", errata.model_bahdanau_query, dot, dot_translation, BAHDANAU_STEP,
                                note="000 eq. 42 against 001 §1.5")
        score_bias = code.call("score_bias", errata.model_additive_bias, additive, additive_translation,
                               note="000 eq. 47")
        worked_example = code.call("worked_example", errata.worked_example_002, note="002 §2.1")
        rescaling = code.call("rescaling", errata.online_rescaling, note="000 eq. 136-137; 004 eq. 83-84")
        glove_bias = code.call("glove_bias", errata.glove_biases, nobias, biased,
                               note="000 eq. 19 against GloVe's eq. 8")
        findings = code.let("findings", lambda: [row_vector, query_cache, frequencies, base_and_pairing,
                                                 objective_names, which_query, score_bias, worked_example, rescaling,
                                                 glove_bias])
        code.let("table", lambda: {f.key: f.rows for f in findings}, note="every finding's numbers, side by side")
        tables.dataframe({"finding": [f.title for f in findings], "where in the notes": [f.where for f in findings],
                          "kind": [f.kind for f in findings], "computed on": [BY_SLUG[f.page].title for f in findings]},
                         hide_index=True)
        left, right = st.columns([3, 2])
        with right:
            ends = code.call("ends", errata.rotation_of_the_row_form, note="000 eq. 109 drawn: q, R q and q R")
            code.figure('go.Figure([go.Scatter(x=[0.0, x], y=[0.0, y], name=name) for name, (x, y) in ends.items()], '
                        'layout_title_text="000 eq. 109 at θ = 30°: R q turns q by +θ, the printed q R by −θ")')
            errata_panel.rotation_figure(ends)
        with left:
            for finding in findings:
                if finding.kind in KINDS[shown]:
                    errata_panel.show(finding, gathered=True)


body()
