import streamlit as st

from engine.embeddings.corpus import Vocab, chunked, load_corpus, tokenize
from engine.embeddings.train import load_shipped_word2vec
from engine.embeddings.word2vec import Word2VecConfig, Word2VecModel, train
from engine.errors import InputError
from ui import figures, training
from ui.loaders import checkpoint_vectors, corpus, corpus_vocab, word2vec_checkpoint
from ui.page import Page, equations
from ui.snippet import Name
from ui.tables import neighbour_table

RESULT = "word2vec_training_result"  # session key: ((corpus, pasted text, config), model) of the last run
# words a second on one core of a laptop, an epoch of the Lee news at d = 50, window 5, k = 5: the compiled
# skip-gram with negative sampling, the batched rest; the full softmax also grows with the vocabulary (1,776 here)
WORDS_PER_SECOND = {("skipgram", "negative"): 500_000, ("cbow", "negative"): 60_000,
                    ("skipgram", "hierarchical"): 12_000, ("cbow", "hierarchical"): 20_000,
                    ("skipgram", "softmax"): 1_300 * 1776, ("cbow", "softmax"): 8_000 * 1776}
EQUATION = {"negative": 16, "hierarchical": 24, "softmax": 3}  # the objective each output layer maximises
page = Page("word2vec_training")

page.intro(
    "Train word2vec here, on real text or your own. Skip-gram predicts each context word from the centre "
    "word, CBOW the centre word from the mean of its context (000 §2.3). The output layer is the full "
    "softmax of eq. 3, negative sampling (eq. 16: the true word against k noise words) or hierarchical "
    "softmax (eq. 24). Training shows its loss as it goes and can be stopped at any time."
)
c1, c2, c3, c4 = st.columns(4)
source = page.select("Corpus", "corpus", ["lee", "wikipedia", "pasted"], where=c1,
                     help="lee: 300 news stories, 60k words; wikipedia: 106 articles, 453k words; pasted: your text")
architecture = page.select("Architecture", "arch", ["skipgram", "cbow"], where=c2)
objective = page.select("Output layer", "objective", ["negative", "hierarchical", "softmax"], where=c3)
k = page.slider("Negative words k", "k", 1, 20, 5, where=c4)
c1, c2, c3, c4, c5 = st.columns(5)
dim = page.slider("Dimension d", "dim", 10, 200, 50, 10, where=c1)
window = page.slider("Window m (each side)", "window", 1, 10, 5, where=c2)
# the Lee corpus is small: at 5 epochs every neighbour sits at cosine ≈ 0.99; 15 separate them in seconds
epochs = page.slider("Epochs", "epochs", 1, 20, 15, where=c3)
min_count = page.slider("Minimum count", "min_count", 1, 20, 5, where=c4)
sample = page.toggle("Subsample", "sample", True, where=c5,
                     help="Drop frequent words at random, as word2vec does (t = 10⁻³)")

code = page.code
pasted, trained_on = "", None
training_note = f"000 eq. {EQUATION[objective]}: {epochs} epochs of SGD, its rate decaying linearly"
if source == "pasted":
    pasted = st.text_area("Your corpus (one sentence or paragraph per line)", max_chars=200_000, key="w2v_paste",
                          placeholder="Paste a few thousand words of text…")
    sentences = code.call("sentences", chunked, code.call("lines", tokenize, pasted))
    if any(not w.isascii() for s in sentences for w in s):
        page.notice("Some words have non-ASCII letters; they are kept as written, accents included.")
else:
    sentences = code.call("sentences", load_corpus, source, via=corpus)
threshold = code.let("threshold", lambda: 1e-3 if sample else 0.0,
                     note="word2vec's subsampling threshold t (0: keep all)")
config = code.call("config", Word2VecConfig, architecture, objective, dim, window, k, min_count=min_count,
                   sample=threshold, epochs=epochs, seed=0)
n_words = code.let("n_words", lambda: sum(len(s) for s in sentences))
with page.guard():
    if n_words == 0:
        raise InputError("Paste some text to train on: the corpus is empty.")
    vocab = code.call("vocab", Vocab.build, sentences, min_count,
                      via=None if source == "pasted" else lambda _, m: corpus_vocab(source, m))
    left, right = st.columns([3, 2])
    with right:
        equations(
            ("000 eq. 16", r"\log \sigma(u_w^\top v_c) + \sum_{i=1}^{k} \mathbb{E}_{\bar w_i \sim P_n} \log \sigma(-u_{\bar w_i}^\top v_c)"),
            ("word2vec's noise distribution", r"P_n(w) \propto \operatorname{count}(w)^{3/4}"),
            ("000 eq. 24", r"\Pr(w \mid c) = \textstyle\prod_j \sigma(\operatorname{branch}_j\, v'^{\top}_{n(w,j)} h)"),
        )
        st.metric("Corpus", f"{n_words:,} words", help=f"{len(vocab):,} occur at least {min_count} times")
    with left:
        if objective == "negative" and len(vocab):
            shown = list(range(min(25, len(vocab))))
            raw = code.call("unigram", vocab.noise_distribution, power=1.0,
                            note="count(w)/N, and word2vec's P_n(w) ∝ count(w)^3/4 that draws eq. 16's k noise words")
            noise = code.call("noise", vocab.noise_distribution)
            code.figure('go.Figure([go.Bar(x=vocab.words[:25], y=unigram[:25], name="unigram count/N"), '
                        'go.Bar(x=vocab.words[:25], y=noise[:25], name="P_n ∝ count^0.75")], '
                        'layout_title="Where the k noise words come from: the power 3/4 lifts rare words")')
            figures.show(figures.bars([vocab.words[i] for i in shown],
                                      {"unigram count/N": raw[shown], "P_n ∝ count^0.75": noise[shown]},
                                      title="Where the k noise words come from: the power 3/4 lifts rare words",
                                      y_title="probability"))
            st.caption(f"The 10 most frequent words make {raw[:10].sum():.1%} of the text but "
                       f"{noise[:10].sum():.1%} of the noise draws.")
    if objective == "softmax" and len(vocab) > 3000:
        page.notice(f"The full softmax scores all {len(vocab):,} words for every pair: expect minutes. "
                    "Negative sampling and hierarchical softmax exist for exactly this reason.")
    probes = training.words_in(page.text("Words to look up in the trained model", "probe", "minister, fire, police",
                                         max_chars=200))
    start = training.buttons()
    st.caption("A small corpus needs many passes: on the Lee news the defaults (15 epochs, d = 50) train in about "
               "10 s on one core and give neighbours like minister → prime, foreign, affairs; at 5 epochs the "
               "vectors have barely moved apart and every neighbour sits at cosine ≈ 0.99.")
    seconds = n_words * epochs * dim / 50 * window / 5 * (k / 5 if objective == "negative" else 1) * (
        len(vocab) / 1776 if objective == "softmax" else 1) / WORDS_PER_SECOND[architecture, objective]
    code.slow(f"Training takes about {max(seconds, 1):,.0f} s on one core of a laptop CPU")
    trained_on = (source, pasted, config)
    if start:
        training.run("word2vec", RESULT, trained_on,
                     lambda report: train(sentences, config, on_progress=report, reports=25),
                     lambda p: f"epoch {p.epoch + 1} of {epochs} · {p.words_per_second:,.0f} words/s",
                     estimate=seconds)
    if not training.finished(st.session_state.get(RESULT), trained_on):  # the code trains at the settings on screen
        code.later("model", train, sentences, config, note=training_note)
        code.later("vectors", Word2VecModel.word_vectors, Name("model"))
        training.later_neighbours(code, probes, vocab)
if (result := st.session_state.get(RESULT)) is not None:
    (_, _, trained_config), model = result
    fresh = training.finished(result, trained_on)
    if fresh:
        model = code.call("model", train, sentences, config, via=lambda *_: result[1], note=training_note)
        code.let("losses", lambda: model.losses)
        vectors = code.call("vectors", model.word_vectors)
    else:  # a run stopped early, or of other settings: shown, not the code's
        vectors = model.word_vectors()
    st.subheader(f"Your model ({training.state(model)}): {trained_config.architecture}, {trained_config.objective}, "
                 f"d = {trained_config.dim}, {len(vectors):,} words, {model.seconds:.1f} s")
    training.loss_curve(model.losses)
    training.neighbour_columns(page, vectors, probes, recorded=fresh)

st.subheader("Shipped checkpoints: ours beside gensim's on the Wikipedia sample")
word = page.text("Word", "word", "music", max_chars=40).strip().lower()
with page.guard():
    shipped_models = (("ours", "wikipedia_sgns", "ours (this app's word2vec)"),
                      ("gensim", "wikipedia_gensim", "gensim Word2Vec"))
    for column, (name, checkpoint, title) in zip(st.columns(2), shipped_models):
        shipped, stored = code.call(f"{name}_model, {name}_stored", load_shipped_word2vec, checkpoint,
                                    via=word2vec_checkpoint)
        vecs = code.call(f"{name}_vectors", shipped.word_vectors,
                         via=lambda checkpoint=checkpoint: checkpoint_vectors(checkpoint))
        with column:
            neighbour_table(code.call(f"{name}_nearest", vecs.neighbours, word), title)
            st.caption(training.scores_text(stored["metrics"]))
