import numpy as np
import streamlit as st

from engine import errata
from engine.embeddings.cooccurrence import weighting
from engine.embeddings.evaluation import PAIR_TITLES, on_shared_vocabulary
from engine.embeddings.glove import load_glove
from engine.embeddings.glove_training import GloVeConfig, GloVeModel, train
from engine.embeddings.train_glove import load_shipped_glove, quality
from ui import errata_panel, figures, glove, queued, tables, training
from ui.loaders import glove as glove_6b_loader
from ui.loaders import glove_checkpoint
from ui.page import Page, equations
from ui.snippet import Name
from ui.tables import neighbour_table

RESULT = "glove_training_result"  # session key: ((corpus, pasted text, window, config), model) of the last run
SCORED = "glove_training_scored"  # session key: (model, its scores), scored once per model
SHIPPED = {"glove_wikipedia": "ours, with biases", "glove_wikipedia_nobias": "ours, no biases (000 eq. 19)"}
NAMES = {"glove_wikipedia": "ours", "glove_wikipedia_nobias": "ours_nobias"}  # the code's names for them
ENTRIES_PER_SECOND = 4_500_000  # AdaGrad steps a second at d = 50 on one core of a laptop (glove.c's loop, compiled)
page = Page("glove_training")
page.intro(
    "GloVe fits u_iᵀv_j to log X_ij over every nonzero count at once (000 eq. 19-20), each term weighted by "
    "f(X_ij) (eq. 21), with AdaGrad as the paper's glove.c: each parameter's step is divided by the root of its "
    "summed squared gradients. 000 eq. 19 has no biases; the paper adds b_i + b̃_j, which absorb how common "
    "each word is. Switch them off to train the notes' form. The shipped checkpoints, one of each, were "
    "trained on the Wikipedia sample by `python -m engine.embeddings.train_glove`; train your own below."
)
c = st.columns([1.4, 1, 1, 1, 1, 1, 1])
source = glove.choose_corpus(page, c[0], default="lee")
window = page.slider("Window", "window", 1, 10, 10, where=c[1])
dim = page.slider("Dimension d", "dim", 10, 100, 50, 10, where=c[2])
epochs = page.slider("Epochs", "epochs", 1, 50, 25, where=c[3])
x_max = page.number("x_max", "x_max", 10.0, step=5.0, where=c[4],
                    help="The paper's 100 suits billions of words; on ours nearly every count is far below it")
alpha = page.slider("Exponent α", "alpha", 0.05, 1.0, 0.75, 0.05, where=c[5])
biases = page.toggle("Biases", "biases", True, where=c[6], help="The paper's b_i + b̃_j; 000 eq. 19 has none")

code = page.code
shipped = {}
left, right = st.columns([3, 2])
with right:
    equations(
        ("000 eq. 19 (P: the counts X)", r"J = \tfrac12 \sum_{i,j} f(P_{ij}) (u_i^\top v_j - \log P_{ij})^2"),
        ("Pennington et al. eq. 8: with biases",
         r"J = \sum_{i,j} f(X_{ij}) (u_i^\top v_j + b_i + \tilde b_j - \log X_{ij})^2"),
        ("AdaGrad, one X_ij at a time as glove.c (η = 0.05, G from 1)",
         r"\theta \mathrel{-}= \eta\, g / \sqrt{G},\quad G \mathrel{+}= (\eta\, g)^2"),
        ("word vectors, glove.c's default", r"w_i = u_i + v_i"),
    )
with left, page.guard():
    shipped = {name: code.call(f"{NAMES[name]}, {NAMES[name]}_stored", load_shipped_glove, name, via=glove_checkpoint)
               for name in SHIPPED}
    curves = {label: shipped[name][1]["losses"] for name, label in SHIPPED.items()}
    first = next(iter(shipped.values()))[1]
    figures.show(figures.lines(np.arange(1, len(first["losses"]) + 1), curves,
                               title="Shipped checkpoints: J per nonzero X_ij, epoch by epoch (Wikipedia sample)",
                               x_title="epoch", y_title="J / nonzero entries", log_y=True, height=320))
    code.figure('px.line({"ours, with biases": ours_stored["losses"], "ours, no biases (000 eq. 19)": '
                'ours_nobias_stored["losses"]}, log_y=True, labels=dict(index="epoch", value="J / nonzero entries"), '
                'title="Shipped checkpoints: J per nonzero X_ij, epoch by epoch (Wikipedia sample)")')
    st.caption(f"Each: {first['config']['epochs']} epochs, d = {first['config']['dim']}, window {first['window']}, "
               f"x_max = {first['config']['x_max']:g}, α = {first['config']['alpha']:g}; "
               f"{first['seconds']:.0f} s on one CPU thread. Without biases u_iᵀv_j must also carry log of how "
               "common i and j are, and J stays higher.")
    glove_6b = code.call("glove_6b", load_glove, via=glove_6b_loader, note="GloVe 6B, to compare with")
    errata_panel.show(code.call("erratum", errata.glove_biases, shipped["glove_wikipedia_nobias"][1],
                                shipped["glove_wikipedia"][1], note="000 eq. 19 against the paper's eq. 8"))

probes = training.words_in(page.text("Words to look up in your model", "probe", "government, war, city",
                                     max_chars=200))
start = training.buttons()
counts, trained_on = None, None
form = "000 eq. 19 with the paper's biases (its eq. 8)" if biases else "000 eq. 19"
training_note = f"{form}: {epochs} epochs of AdaGrad over the nonzero X_ij"
with page.guard():
    counts = glove.count(source, window, code)
    config = code.call("config", GloVeConfig, dim, epochs, x_max, alpha, biases=biases)
    X = counts.X
    entries = code.let("entries", lambda: X.data)
    f_entries = code.call("f_entries", weighting, entries, x_max, alpha,
                          via=lambda *_: glove.weights(counts, window, True, x_max, alpha),
                          note="000 eq. 21: each nonzero X_ij's weight f(X_ij)")  # an x_max ≤ 0 is refused here
    mean_f = code.let("mean_f", lambda: f_entries.mean())
    st.caption(f"{source}: {counts.words:,} words, {len(counts.vocab):,} in the vocabulary, X with {counts.X.nnz:,} "
               f"nonzero entries (window {window}, 1/d); an epoch visits each once. Mean f(X_ij) {mean_f:.3f}.")
    seconds = counts.X.nnz * epochs * dim / 50 / ENTRIES_PER_SECOND
    code.slow(f"Training takes about {max(seconds, 1):,.0f} s on one core of a laptop CPU, and loading GloVe 6B "
              "about 10 s")
    trained_on = (source, counts.text, window, config)
    if start:
        training.run("glove", RESULT, trained_on,
                     lambda report: train(counts.X, counts.vocab, config, on_progress=report, reports=25),
                     lambda p: f"epoch {p.epoch + 1} of {epochs} · {p.entries_per_second:,.0f} entries/s",
                     estimate=seconds, label="J per nonzero X_ij", x_label="epoch")
    if not training.finished(st.session_state.get(RESULT), trained_on):  # the code trains at the settings on screen
        code.later("model", train, counts.X, counts.vocab, config, note=training_note)
        code.later("vectors", GloVeModel.word_vectors, Name("model"), note="w_i = u_i + v_i, glove.c's default")
        training.later_neighbours(code, probes, counts.vocab)
        code.later("scores", quality, Name("vectors"), glove_6b,
                   note="analogies and rated pairs: on your words, and beside GloVe 6B on the words both hold")

rows = {}
if (result := st.session_state.get(RESULT)) is not None:
    (trained_source, _, trained_window, trained), model = result
    fresh = training.finished(result, trained_on)
    if fresh:
        model = code.call("model", train, counts.X, counts.vocab, config, via=lambda *_: result[1], note=training_note)
        code.let("losses", lambda: model.losses)
        vectors = code.call("vectors", model.word_vectors, note="w_i = u_i + v_i, glove.c's default")
    else:  # a run stopped early, or of other settings: shown, not the code's
        vectors = model.word_vectors()
    st.subheader(f"Your model ({training.state(model)}): {trained_source}, window {trained_window}, d = {trained.dim}, "
                 f"{'biases' if trained.biases else 'no biases'}, {len(vectors):,} words, {model.seconds:.1f} s")
    training.loss_curve(model.losses, label="J per nonzero X_ij", x_label="epoch")
    training.neighbour_columns(page, vectors, probes, recorded=fresh)
    with page.guard():
        if (scored := st.session_state.get(SCORED)) is None or scored[0] is not model:
            reference = glove_6b_loader()
            st.session_state[SCORED] = scored = (model, queued.run(
                "evaluate", ("glove", id(model)), lambda report: quality(vectors, reference),  # the job holds model
                "Scoring your vectors on the analogies and rated pairs", estimate=2.0))
        measured = scored[1]
        if fresh:
            code.call("scores", quality, vectors, glove_6b, via=lambda *_: measured,
                      note="analogies and rated pairs: on your words, and beside GloVe 6B on the words both hold")
        st.caption(f"Your model on its own words: {training.scores_text(measured['metrics'])}.")
        rows = {"yours": measured["shared"]["ours"], "GloVe 6B, your model's words": measured["shared"]["glove_6b"]}

if shipped:
    st.subheader("Ours beside GloVe 6B on the words both know")
    shared = next(iter(shipped.values()))[1]["shared"]
    rows = {label: shipped[name][1]["shared"]["ours"] for name, label in SHIPPED.items()} | {
        "GloVe 6B 50d, the same words": shared["glove_6b"]} | rows
    tables.dataframe({"vectors": list(rows), "analogies": [m["analogy_accuracy"] for m in rows.values()],
                      "questions": [m["analogy_questions"] for m in rows.values()],
                      **{f"{title} ρ": [m[f"{name}_spearman"] for m in rows.values()]
                     for name, title in PAIR_TITLES.items()}},
                     hide_index=True, column_config={"analogies": st.column_config.NumberColumn(format="percent")})
    st.caption(f"The shipped vectors and GloVe 6B, each cut to the {shared['words']:,} words both hold, answer the "
               "same Google analogy questions (3CosAdd) among the same words and are scored on the same rated "
               "pairs. GloVe 6B saw 6 billion words, ours 453 thousand.")
    word = page.text("Neighbours of", "word", "war", max_chars=40).strip().lower()
    with page.guard():
        cut = next(iter(SHIPPED))
        _, theirs = code.call("ours_shared, glove_6b_shared", on_shared_vocabulary, shipped[cut][0], glove_6b,
                              via=lambda *_: glove.shared_with_glove_6b(cut), note="both cut to the words both hold")
        shown = [(label, NAMES[name], shipped[name][0]) for name, label in SHIPPED.items()]
        shown.append(("GloVe 6B, the same words", "glove_6b", theirs))
        for column, (label, name, vecs) in zip(st.columns(3), shown):
            with column:
                neighbour_table(code.call(f"{name}_nearest", vecs.neighbours, word), label)
