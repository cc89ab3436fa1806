import streamlit as st

from engine import errata
from engine.positions.decoupled import MLAConfig
from engine.seq2seq.decode import translate
from ui import errata_panel, tables
from ui.catalog import BY_SLUG
from ui.loaders import finetuned_classifier, glove_checkpoint, seq2seq_checkpoint
from ui.page import Page
from ui.seq2seq import DATE_EXAMPLE

page = Page("notes_errata")
page.intro(
    "The notes this app follows are mostly right, and where they are not it matters to a reader checking the "
    "app against them. Each finding below is computed by the engine, shown with its numbers on the page it "
    "concerns, and gathered here: errors (a formula or number that is false as printed) and disagreements "
    "(two notes choosing differently, where the pages let you choose)."
)
KINDS = {"every finding": ("error", "disagreement"), "errors": ("error",), "disagreements": ("disagreement",)}
shown = page.select("Show", "show", list(KINDS))

mla = MLAConfig()  # the Decoupled RoPE page's defaults
dot, additive = seq2seq_checkpoint("dot")[0], seq2seq_checkpoint("additive")[0]
fine = finetuned_classifier()[2]["metrics"]
with page.guard():
    findings = [
        errata.rope_row_vector(), errata.mla_query_cache(mla.n_heads, mla.d_c, mla.d_h_rope),
        errata.rope_frequency_formula(), errata.rope_base_and_pairing(),
        errata.gpt_objective_names(fine["held_out_L1"], fine["held_out_L2"], fine["lambda"],
                                   "the fine-tuned character model's mean losses on 400 held-out snippets"),
        errata_panel.bahdanau_query(dot, translate(dot, DATE_EXAMPLE), 4),  # step 4: that page's default
        errata_panel.additive_bias(additive, translate(additive, DATE_EXAMPLE)),
        errata.worked_example_002(), errata.online_rescaling(),
        errata.glove_biases(glove_checkpoint("glove_wikipedia_nobias")[1], glove_checkpoint("glove_wikipedia")[1]),
    ]
    tables.dataframe({"finding": [f.title for f in findings], "where in the notes": [f.where for f in findings],
                      "kind": [f.kind for f in findings], "computed on": [BY_SLUG[f.page].title for f in findings]},
                     hide_index=True)
    left, right = st.columns([3, 2])
    with right:
        errata_panel.rotation_figure()
    with left:
        for finding in findings:
            if finding.kind in KINDS[shown]:
                errata_panel.show(finding, gathered=True)
