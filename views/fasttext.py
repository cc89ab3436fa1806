import numpy as np
import streamlit as st

from engine.embeddings.subwords import buckets, fnv1a, ngrams
from engine.embeddings.vectors import UnknownWordError
from ui import figures, loaders, tables
from ui.page import Page, equations
from ui.tables import neighbour_table

BUCKETS = ["2,000,000", "100,000", "10,000", "1,000"]  # fastText's default, then fewer: collisions appear
page = Page("fasttext")
page.intro(
    "FastText (Bojanowski et al. 2017) gives a word the vectors of its character n-grams: “where” is seen as "
    "<wh, whe, her, ere, re> and <where> itself, each n-gram hashed into one of a fixed number of buckets, and "
    "the word's vector is built from theirs (000 §4.1 eq. 17). Training is skip-gram with negative sampling "
    "with that vector in place of the word's own (eq. 18 scores it against a context). A word never seen in "
    "training still has n-grams, so it still gets a vector: try a misspelling."
)
c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
word = page.text("Word", "word", "lecturerz", max_chars=40, where=c1).strip().lower()
min_n = int(page.slider("Shortest n", "min_n", 1, 6, 3, where=c2))
max_n = int(page.slider("Longest n", "max_n", 1, 8, 6, where=c3))
n_buckets = int(page.select("Buckets", "buckets", BUCKETS, "2,000,000", where=c4).replace(",", ""))
model, vectors, stored = loaders.fasttext_checkpoint()

left, right = st.columns([3, 2])
with right:
    equations(
        ("000 eq. 17: a word from its n-grams", r"\mathbf{w} \equiv \sum_{s \in ns(w)} \mathbf{z}_s"),
        ("000 eq. 18: its score with a centre word", r"u(\mathbf{w}, \mathbf{v}_c) = \exp\Big[\sum_{s \in ns(w)}"
                                                     r" \mathbf{z}_s^\top \mathbf{v}_c\Big]"),
        ("fastText's bucket of an n-gram", r"b(s) = \mathrm{FNV\text{-}1a}(s) \bmod B"),
    )
with left, page.guard():
    if not word:
        page.refuse("type a word: the box is empty")
    grams = ngrams(word, min_n, max_n)
    if not grams:
        page.refuse(f"“{word}” has no n-grams of {min_n} to {max_n} characters inside < and >: lower the shortest n")
    distinct, shared = loaders.ngram_collisions(min_n, max_n, n_buckets)
    ids = buckets(grams, n_buckets)
    tables.dataframe({"n-gram (fastText)": grams, "000 §4.1 writes": [g.strip("<>") for g in grams],
                      "FNV-1a": [fnv1a(g) for g in grams], f"bucket of {n_buckets:,}": ids,
                      "shares its bucket with": [", ".join(g2 for g2 in shared.get(b, []) if g2 != g)[:80]
                                                 for g, b in zip(grams, ids)]},
                     hide_index=True, height=min(35 * len(grams) + 38, 300))
    st.caption(f"{len(grams)} n-grams of {min_n} to {max_n} characters. The notes list the 3-grams of “where” "
               "as wh, whe, her, ere, re: the boundaries < and > fastText adds are left out there, which would make "
               "the suffix re> of “where” the same n-gram as the inside re of “are”. The vocabulary's "
               f"{len(model.vocab):,} words have {distinct:,} distinct n-grams in this range; with {n_buckets:,} "
               f"buckets, {sum(len(v) for v in shared.values()):,} of them share a bucket with another "
               "and so share one vector.")

st.subheader(f"“{word}”: a vector from its n-grams, and its neighbours")
ours, theirs = st.columns(2)
vector = None
with ours, page.guard():
    if (min_n, max_n) != (model.config.min_n, model.config.max_n) or n_buckets != model.config.buckets:
        page.notice(f"Our FastText was trained with n from {model.config.min_n} to {model.config.max_n} and "
                    f"{model.config.buckets:,} buckets: its vectors below use those, not the settings above.")
    known = word in model.vocab.index
    trained_grams, _, rows = model.ngram_rows(word)
    vector = model.vector(word)
    neighbour_table(vectors.neighbours_of_vector(vector, 10, exclude=word),
                    f"Our FastText: {'a vocabulary word' if known else 'never seen in training'}")
    total = rows.sum(0)  # eq. 17's sum over the n-grams
    st.caption(f"{len(trained_grams)} n-grams{' and the word itself' if known else ''}; eq. 17's sum has length "
               f"{np.linalg.norm(total):.3f}, fastText's mean {np.linalg.norm(vector):.3f}. The two point the "
               "same way, so cosines and neighbours do not depend on which one you take.")
with theirs:
    word2vec = loaders.checkpoint_vectors("wikipedia_sgns")
    try:
        neighbour_table(word2vec.neighbours(word, 10), "Our word2vec (same corpus and settings)")
    except UnknownWordError as unknown:
        st.markdown("**Our word2vec (same corpus and settings)**")
        st.info(f"word2vec has no vector for it: {unknown}")
    metrics = stored["metrics"]
    st.caption(f"Our FastText scores {metrics['analogy_accuracy']:.1%} on the Google analogies and "
               f"ρ = {metrics['wordsim353_spearman']:.3f} on WordSim-353, trained in {stored['seconds']:.0f} s "
               "on one thread (`python -m engine.embeddings.train_fasttext`).")

if vector is not None:
    labels, parts = list(trained_grams), rows  # (G, d)
    if known:
        labels, parts = [f"{word} (own row)", *labels], np.vstack([model.word_rows[model.vocab.index[word]], rows])
    share = parts @ vector / (len(parts) * vector @ vector)  # (G,): z_s·w / (G ‖w‖²), summing to 1
    figures.show(figures.bars(labels, {"share": share.tolist()}, title=f"What each row adds to the vector of “{word}”",
                              y_title="z_s · w / (G ‖w‖²)", height=300))
    st.caption("w is the mean of these G rows, so the bars sum to 1: tall bars are the n-grams the vector mostly "
               "comes from. A row with no bar is an n-gram in a bucket no training word reaches: its vector is 0.")

st.subheader("Ours against gensim's FastText: same corpus, same settings")
recorded = loaders.word_vector_benchmark()
if recorded is None:
    st.info("No measurement recorded yet: `python -m benchmarks.word2vec` trains both and writes "
            "benchmarks/results/word2vec.json.")
else:
    rows = recorded["fasttext"]
    tables.dataframe({"workers": [r["workers"] for r in rows],
                      "ours, words/s": [round(r["ours_words_per_s"]) for r in rows],
                      "gensim, words/s": [round(r["gensim_words_per_s"]) for r in rows],
                      "speed, ours ÷ gensim": [r["throughput_ratio"] for r in rows],
                      "analogies, ours / gensim": [f"{r['ours_quality']['analogy_accuracy']:.1%} / "
                                                   f"{r['gensim_quality']['analogy_accuracy']:.1%}" for r in rows],
                      "WordSim-353 ρ, ours / gensim": [f"{r['ours_quality']['wordsim353_spearman']:.3f} / "
                                                       f"{r['gensim_quality']['wordsim353_spearman']:.3f}"
                                                       for r in rows]},
                     hide_index=True,
                     column_config={"speed, ours ÷ gensim": st.column_config.NumberColumn(format="%.2f×")})
    st.caption(f"Measured {recorded['date'][:10]} on {recorded['device']} by `python -m benchmarks.word2vec`: the "
               "Wikipedia sample, 5 epochs, vocabulary building included for both. Both run the pair loop of "
               "word2vec.c; ours is compiled with numba and only allocates rows for the buckets a training word "
               "reaches, where gensim allocates all 2,000,000.")
