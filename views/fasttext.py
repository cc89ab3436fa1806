import numpy as np
import streamlit as st

from engine.embeddings.subwords import buckets, collisions, fnv1a_each, ngrams, vocabulary_ngrams
from engine.embeddings.train import load_shipped_word2vec
from engine.embeddings.train_fasttext import load_shipped_fasttext
from engine.embeddings.vectors import UnknownWordError
from ui import boundary, figures, loaders, tables
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


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    word = page.text("Word", "word", "lecturerz", max_chars=40, where=c1).strip().lower()
    min_n = int(page.slider("Shortest n", "min_n", 1, 6, 3, where=c2))
    max_n = int(page.slider("Longest n", "max_n", 1, 8, 6, where=c3))
    n_buckets = int(page.select("Buckets", "buckets", BUCKETS, "2,000,000", where=c4).replace(",", ""))
    code = page.code
    shipped = loaders.fasttext_checkpoint()
    model, stored = code.call("model, stored", load_shipped_fasttext, via=lambda: (shipped[0], shipped[2]))
    vectors = code.call("vectors", model.word_vectors, via=lambda: shipped[1],
                        note="every vocabulary word's vector: the mean of its own row and its n-grams' rows")

    left, right = st.columns([3, 2])
    with right:
        equations(
            ("000 eq. 17: a word from its n-grams", r"\mathbf{w} \equiv \sum_{s \in ns(w)} \mathbf{z}_s"),
            ("000 eq. 18: its score with a centre word", (r"u(\mathbf{w}, \mathbf{v}_c) = \exp\Big[\sum_{s \in ns(w)}"
                                                          r" \mathbf{z}_s^\top \mathbf{v}_c\Big]")),
            ("fastText's bucket of an n-gram", r"b(s) = \mathrm{FNV\text{-}1a}(s) \bmod B"),
        )
    with left, page.guard():
        if not word:
            page.refuse("type a word: the box is empty")
        grams = code.call("grams", ngrams, word, min_n, max_n, note="000 §4.1: the word's n-grams, inside < and >")
        if not grams:
            page.refuse(f"“{word}” has no n-grams of {min_n} to {max_n} characters inside < and >: lower the "
                        "shortest n")
        hashes = code.call("hashes", fnv1a_each, grams)
        ids = code.call("ids", buckets, grams, n_buckets, note="fastText's bucket of each: b(s) = FNV-1a(s) mod B")
        words = code.let("words", lambda: model.vocab.words)
        every_gram, every_hash = code.call("every_gram, every_hash", vocabulary_ngrams, words, min_n, max_n,
                                           via=lambda *_: loaders.ngram_hashes(min_n, max_n),
                                           note="the vocabulary's distinct n-grams, and the buckets several of them "
                                                "share")
        shared = code.call("shared", collisions, every_gram, n_buckets, every_hash,
                           via=lambda *_: loaders.ngram_collisions(min_n, max_n, n_buckets)[1])
        tables.dataframe({"n-gram (fastText)": grams, "000 §4.1 writes": [g.strip("<>") for g in grams],
                          "FNV-1a": hashes, f"bucket of {n_buckets:,}": ids,
                          "shares its bucket with": [", ".join(g2 for g2 in shared.get(b, []) if g2 != g)[:80]
                                                     for g, b in zip(grams, ids)]},
                         hide_index=True, height=min(35 * len(grams) + 38, 300))
        st.caption(f"{len(grams)} n-grams of {min_n} to {max_n} characters. The notes list the 3-grams of “where” "
                   "as wh, whe, her, ere, re: the boundaries < and > fastText adds are left out there, which would "
                   "make "
                   "the suffix re> of “where” the same n-gram as the inside re of “are”. The vocabulary's "
                   f"{len(model.vocab):,} words have {len(every_gram):,} distinct n-grams in this range; with "
                   f"{n_buckets:,} buckets, {shared.grams_sharing:,} of them share a bucket with another "
                   "and so share one vector.")

    st.subheader(f"“{word}”: a vector from its n-grams, and its neighbours")
    ours, theirs = st.columns(2)
    vector = None
    with ours, page.guard():
        if (min_n, max_n) != (model.config.min_n, model.config.max_n) or n_buckets != model.config.buckets:
            page.notice(f"Our FastText was trained with n from {model.config.min_n} to {model.config.max_n} and "
                        f"{model.config.buckets:,} buckets: its vectors below use those, not the settings above.")
        known = word in model.vocab.index
        trained_grams, _, rows = code.call("trained_grams, trained_ids, rows", model.ngram_rows, word,
                                           note="the n-grams of the model's own range, and their rows z_s (G, d)")
        vector = code.call("vector", model.vector, word, note="fastText's vector: the mean of the word's rows")
        nearest = code.call("nearest", vectors.neighbours_of_vector, vector, exclude=word)
        neighbour_table(nearest, f"Our FastText: {'a vocabulary word' if known else 'never seen in training'}")
        total = code.let("total", lambda: rows.sum(0), note="000 eq. 17: the sum over the n-grams, the same direction")
        lengths = code.let("lengths", lambda: (np.linalg.norm(total), np.linalg.norm(vector)))
        st.caption(f"{len(trained_grams)} n-grams{' and the word itself' if known else ''}; eq. 17's sum has length "
                   f"{lengths[0]:.3f}, fastText's mean {lengths[1]:.3f}. The two point the "
                   "same way, so cosines and neighbours do not depend on which one you take.")
    with theirs:
        word2vec_model, _ = code.call("word2vec_model, word2vec_stored", load_shipped_word2vec, "wikipedia_sgns",
                                      via=loaders.word2vec_checkpoint)
        word2vec = code.call("word2vec", word2vec_model.word_vectors,
                             via=lambda: loaders.checkpoint_vectors("wikipedia_sgns"))
        try:
            if word not in word2vec:
                word2vec.id(word)  # raises UnknownWordError, with spellings to suggest
            neighbour_table(code.call("word2vec_nearest", word2vec.neighbours, word),
                            "Our word2vec (same corpus and settings)")
        except UnknownWordError as unknown:
            st.markdown("**Our word2vec (same corpus and settings)**")
            st.info(f"word2vec has no vector for it: {unknown}")
        metrics = stored["metrics"]
        st.caption(f"Our FastText scores {metrics['analogy_accuracy']:.1%} on the Google analogies and "
                   f"ρ = {metrics['wordsim353_spearman']:.3f} on WordSim-353, trained in {stored['seconds']:.0f} s "
                   "on one thread (`python -m engine.embeddings.train_fasttext`).")

    if vector is not None:
        labels = list(trained_grams)
        share_note = "what each row adds to the vector: z_s·w / (G ‖w‖²), summing to 1"
        if known:  # the rows the vector is the mean of, (G, d): the word's own row, then its n-grams'
            labels = [f"{word} (own row)", *labels]
            own_word = word  # no setting's name: the snippet spells the word as its other lines do, a literal
            parts = code.let("parts", lambda: np.vstack([model.word_rows[model.vocab.index[own_word]], rows]),
                             note="a vocabulary word's own row first, then its n-grams'")
            share = code.let("share", lambda: parts @ vector / (len(parts) * vector @ vector), note=share_note)  # (G,)
        else:
            share = code.let("share", lambda: rows @ vector / (len(rows) * vector @ vector), note=share_note)  # (G,)
        code.figure(f"px.bar(x={labels!r}, y=share, title='What each row adds to the vector of “{word}”', "
                    "labels=dict(x='', y='z_s · w / (G ‖w‖²)'))")
        figures.show(figures.bars(labels, {"share": share.tolist()},
                                  title=f"What each row adds to the vector of “{word}”", y_title="z_s · w / (G ‖w‖²)",
                                  height=300))
        st.caption("w is the mean of these G rows, so the bars sum to 1: tall bars are the n-grams the vector mostly "
                   "comes from. A row with no bar is an n-gram in a bucket no training word reaches: its vector is 0.")

    st.subheader("Ours against gensim's FastText: same corpus, same settings")
    if (recorded := loaders.word_vector_benchmark()) is None:
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
                                                           for r in rows]}, hide_index=True,
                         column_config={"speed, ours ÷ gensim": st.column_config.NumberColumn(format="%.2f×")})
        st.caption(f"Measured {recorded['date'][:10]} on {recorded['device']} by `python -m benchmarks.word2vec`: the "
                   "Wikipedia sample, 5 epochs, vocabulary building included for both. Both run the pair loop of "
                   "word2vec.c; ours is compiled with numba and only allocates rows for the buckets a training word "
                   "reaches, where gensim allocates all 2,000,000.")


body()
