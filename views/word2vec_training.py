import streamlit as st

from engine.embeddings.corpus import Vocab, chunked, tokenize
from engine.embeddings.vectors import WordVectors
from engine.embeddings.word2vec import Word2VecConfig, train
from engine.errors import InputError
from ui import figures, training
from ui.loaders import checkpoint_vectors, corpus, corpus_vocab, word2vec_checkpoint
from ui.page import Page, equations
from ui.tables import neighbour_table

RESULT = "word2vec_training_result"  # session key: (settings, model) of the last run, finished or stopped
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
subsample = page.toggle("Subsample", "sample", True, where=c5, help="Drop frequent words at random, as word2vec does (t = 10⁻³)")

pasted = ""
if source == "pasted":
    pasted = st.text_area("Your corpus (one sentence or paragraph per line)", max_chars=200_000, key="w2v_paste",
                          placeholder="Paste a few thousand words of text…")
    sentences = chunked(tokenize(pasted))
    if any(not w.isascii() for s in sentences for w in s):
        page.notice("Some words have non-ASCII letters; they are kept as written, accents included.")
else:
    sentences = corpus(source)
config = Word2VecConfig(architecture, objective, dim, window, k, min_count=min_count, sample=1e-3 if subsample else 0,
                        epochs=epochs, seed=0)
n_words = sum(len(s) for s in sentences)
with page.guard():
    if n_words == 0:
        raise InputError("Paste some text to train on: the corpus is empty.")
    vocab = Vocab.build(sentences, min_count) if source == "pasted" else corpus_vocab(source, min_count)
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
            raw, noise = vocab.noise_distribution(power=1.0), vocab.noise_distribution()
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
    if start:
        training.run("word2vec", RESULT, config,
                     lambda report: train(sentences, config, on_progress=report, reports=25),
                     lambda p: f"epoch {p.epoch + 1} of {epochs} · {p.words_per_second:,.0f} words/s",
                     estimate=10.0, reads=(source, pasted))
result = st.session_state.get(RESULT)
if result is not None:
    trained_config, model = result
    vectors = WordVectors(model.vocab.words, model.input_vectors.numpy())
    st.subheader(f"Your model ({training.state(model)}): {trained_config.architecture}, {trained_config.objective}, "
                 f"d = {trained_config.dim}, {len(vectors):,} words, {model.seconds:.1f} s")
    training.loss_curve(model.losses)
    training.neighbour_columns(page, vectors, probes)

st.subheader("Shipped checkpoints: ours beside gensim's on the Wikipedia sample")
ours, theirs = checkpoint_vectors("wikipedia_sgns"), checkpoint_vectors("wikipedia_gensim")
(_, our_extra), (_, their_extra) = word2vec_checkpoint("wikipedia_sgns"), word2vec_checkpoint("wikipedia_gensim")
word = page.text("Word", "word", "music", max_chars=40).strip().lower()
with page.guard():
    g1, g2 = st.columns(2)
    for column, name, vecs, extra in ((g1, "ours (this app's word2vec)", ours, our_extra),
                                      (g2, "gensim Word2Vec", theirs, their_extra)):
        with column:
            neighbour_table(vecs.neighbours(word, 10), name)
            st.caption(training.scores_text(extra["metrics"]))
