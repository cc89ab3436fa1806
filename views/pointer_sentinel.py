import streamlit as st

from engine.embeddings.corpus import tokenize
from engine.seq2seq.sentinel import MAX_WORDS, WINDOW, Passage, load_shipped_sentinel, perplexity_as_unk, read_passage
from ui import figures, tables
from ui.loaders import sentinel_model
from ui.page import Page, equations


@st.cache_resource(max_entries=32, show_spinner=False)
def read(text: str, window: int, _model, _lstm, _vocab: list[str], _words: list[str]) -> tuple[Passage, float, float]:
    """The passage read by the pointer sentinel, and its perplexity under both models, once per server for each text
    and window (which fix the words), shared read-only: both LSTMs read it again on every run, the Predicting word
    slider's too (issue 47)."""
    return (read_passage(_model, _vocab, _words, window), perplexity_as_unk(_model, _vocab, _words, window),
            perplexity_as_unk(_lstm, _vocab, _words, window))


page = Page("pointer_sentinel")
page.intro(
    "A language model, not a translator (000 §7.2.4): a word-level LSTM trained on the Wikipedia sample "
    "predicts each next word. Beside its softmax over 8,000 words it points at the last L words it read; "
    "one softmax over those L words and a learned sentinel decides both where to point and, through the "
    "sentinel's share g, how much to trust the vocabulary instead (eq. 53). Rare words and names that "
    "appeared a few words back come from the pointer, even when the vocabulary has never seen them."
)
PASSAGE = ("The chair of the federal reserve janet yellen said on tuesday that interest rates would stay low for "
           "some time. Speaking to reporters in washington, yellen said that the economy was growing but that the "
           "labour market had not recovered. Asked whether the bank would raise rates this year, yellen said that "
           "it would depend on the economy.")
text = page.text("Passage", "text", PASSAGE, max_chars=3000, area=True)
code = page.code
model, extra = code.call("model, extra", load_shipped_sentinel, "sentinel", via=sentinel_model,
                         note="the pointer sentinel LM trained for this project, and the same LSTM without a pointer")
lstm, lstm_extra = code.call("lstm, lstm_extra", load_shipped_sentinel, "sentinel_lstm", via=sentinel_model)
vocab = code.let("vocab", lambda: extra["vocab"])
with page.guard():
    lines = code.call("lines", tokenize, text)
    words = code.let("words", lambda: [w for line in lines for w in line])
    window_column, word_column = st.columns(2)  # side by side, so a projector shows the first figure
    with window_column:
        window = page.slider("Window L (words the pointer sees)", "L", 1, WINDOW, WINDOW)
        if window > len(words):
            st.caption(f"L = {window} is longer than the passage ({len(words)} words): the window holds all of it.")
    passage, perplexity, lstm_perplexity = read(text, window, model, lstm, vocab, words)
    code.call("passage", read_passage, model, vocab, words, window, via=lambda *_: passage,
              note="000 eq. 53 at every word after the first, each predicted from those before it")
    if passage.cut:
        page.notice(f"The passage has {len(words):,} words; only its first {MAX_WORDS} are read.")
    mix = code.let("mix", lambda: passage.mixture)
    g, p_vocab, p_ptr, p = code.let("g, p_vocab, p_ptr, p", lambda: (mix.gate, mix.p_vocab, mix.p_ptr, mix.p),
                                    note="000 eq. 53: p(next word) = g p_vocab + (1 − g) p_ptr, each (T,)")
    share = code.call("share", mix.pointer_share, note="how much of p came from the pointer: (1 − g) p_ptr / p")
    n = len(passage.words)
    labels = [f"{t + 1} {w}" + ("" if known else " *") for t, (w, known) in
              enumerate(zip(passage.words[1:], passage.known[1:]))]
    with word_column:
        word = page.slider("Predicting word", "word", 1, n - 1, passage.first_copy() + 1)
    positions, a = code.call("positions, a", passage.pointer_softmax, word, window,
                             note="a = softmax([z; q·s]) over the window and the sentinel, predicting words[word]")
    code.call("perplexity", perplexity_as_unk, model, vocab, words, window, via=lambda *_: perplexity,
              note="this passage's perplexity, an unknown word read and predicted as <unk>")
    code.call("lstm_perplexity", perplexity_as_unk, lstm, vocab, words, window, via=lambda *_: lstm_perplexity)
    code.figure('labels = [f"{t} {w}" for t, w in enumerate(passage.words) if t]\n'
                'go.Figure([go.Bar(x=labels, y=g * p_vocab, name="g · p_vocab (generate)"),\n'
                '           go.Bar(x=labels, y=(1 - g) * p_ptr, name="(1 − g) · p_ptr (copy)")],\n'
                '          layout={"barmode": "stack", "title": "p(next word) = g p_vocab + (1 − g) p_ptr"})')
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.bars(labels, {"g · p_vocab (generate)": (g * p_vocab).tolist(),
                                           "(1 − g) · p_ptr (copy)": ((1 - g) * p_ptr).tolist()},
                                  title="p(next word) = g p_vocab + (1 − g) p_ptr, each word split into its two parts",
                                  y_title="probability", stacked=True))
        st.caption("Each bar is the probability the model gave the word that came next; * marks a word outside "
                   "the vocabulary, read as <unk>, which only the pointer can predict.")
        seen = [f"{i} {passage.words[i]}" for i in positions]
        figures.show(figures.bars(seen + ["sentinel"], {"a_i": a.tolist()},
                                  title=f"Predicting “{passage.words[word]}”: one softmax over the window and the "
                                        f"sentinel (g = {float(g[word - 1]):.3f})", y_title="a"))
    with right:
        equations(
            ("pointer scores", r"q = \tanh(W h_{N-1} + b),\quad z_i = q^\top h_i,\ i \in [N-L, N-1]"),
            ("the sentinel in the same softmax", r"a = \operatorname{softmax}\big([z;\ q^\top s]\big),\quad "
                                                 r"g = a_{L+1}"),
            ("pointer distribution", r"p_{\text{ptr}}(w) = \frac{1}{1 - g}\sum_{i:\, w_i = w} a_i"),
            ("000 eq. 53", r"p(w) = g\, p_{\text{vocab}}(w) + (1 - g)\, p_{\text{ptr}}(w)"),
        )
        models = {"with pointer": (extra, perplexity), "LSTM alone": (lstm_extra, lstm_perplexity)}
        for column, (which, (saved, on_passage)) in zip(st.columns(2), models.items()):
            column.metric(f"Held out, {which}", f"{saved['held_out_perplexity']:.1f}", help="perplexity")
            column.metric(f"This passage, {which}", f"{on_passage:.1f}")
        st.caption(f"Held out: {extra['held_out_words']:,} words of Wikipedia articles never trained on. "
                   "Perplexities read an unknown word as <unk>, as the paper's Penn Treebank does; the table "
                   "follows each word itself. This is Merity et al.'s model; the Pointer-generator page is See "
                   "et al.'s different one, a gate over a seq2seq decoder.")
    numbers = {"g": g.numpy(), "p_vocab": p_vocab.numpy(), "p_ptr": p_ptr.numpy(),
               "p = g p_vocab + (1 − g) p_ptr": p.numpy(), "share from the pointer": share.numpy()}
    tables.dataframe({"next word": labels, **numbers}, hide_index=True,
                     column_config={k: st.column_config.NumberColumn(format="%.4f") for k in numbers})
