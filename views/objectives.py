import streamlit as st

from engine import errata
from engine.errors import InputError
from engine.transformer.objectives import causal_loss, fine_tuning_losses, masked_loss, shuffled_words
from engine.transformer.train import load_classifier, load_lm, unigram_loss
from ui import boundary, errata_panel, figures
from ui.loaders import char_model, finetuned_classifier, prompt_ids, unigram_baseline
from ui.page import Page, equations


# Each loss once per server for each text and setting, shared read-only: every run scored the sentence with all
# three models again, moving λ or the masked fraction too (issue 47). The text fixes its ids; the models are fixed.
@st.cache_resource(max_entries=64, show_spinner=False)
def causal_scored(sentence: str, _model, _ids) -> tuple:
    return causal_loss(_model, _ids)


@st.cache_resource(max_entries=64, show_spinner=False)
def masked_scored(sentence: str, rate: float, seed: int, _model, _vocab, _ids) -> tuple:
    return masked_loss(_model, _vocab, _ids, rate, seed)


@st.cache_resource(max_entries=64, show_spinner=False)
def fine_tuning_scored(text: str, as_written: bool, lam: float, _clf, _ids) -> dict:
    return fine_tuning_losses(_clf, _ids, as_written, lam)


page = Page("objectives")
code = page.code
page.intro(
    "The same sentence under two pre-training objectives (001 §1.9). A causal LM predicts every next character "
    "from the ones before it, so every position contributes to its loss. A masked LM sees the whole sentence "
    "with some characters replaced by [MASK] and is scored only where it had to fill one in. Each objective "
    "here has its own trained model from the same script."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3 = st.columns([3, 1, 1])
    # a held-out sentence about as long as the fine-tuning task's snippets, which the classifier below gets right
    sentence = page.text("Sentence", "text", "The deciding rubber was to be Rafter's farewell match before taking an "
                         "indefinite break from the sport.", 120, where=c1)
    rate = page.slider("Masked fraction", "rate", 0.05, 0.5, 0.15, 0.05, where=c2)
    seed = page.slider("Seed", "seed", 0, 99, 0, where=c3)

    causal_lm, vocab, causal_extra = code.call("causal_lm, vocab, causal_extra", load_lm, "causal", via=char_model,
                                               note="two trained character LMs, one per objective")
    mlm, _, mlm_extra = code.call("mlm, mlm_vocab, mlm_extra", load_lm, "mlm", via=char_model)
    with page.guard():
        _, sentence = prompt_ids(page, sentence, vocab, min(causal_lm.config.max_seq_len, mlm.config.max_seq_len) - 1)
        ids = code.call("ids", vocab.encode, sentence)
        if len(ids) < 2:
            raise InputError("type at least two characters: the causal loss predicts each one from the one before")
        causal_nats, causal_losses = code.call("causal_nats, causal_losses", causal_loss, causal_lm, ids,
                                               via=lambda *_: causal_scored(sentence, causal_lm, ids),
                                               note="003 eq. 65 (GPT's L1, negated): every position predicts the next")
        masked_in, masked_nats, masked_losses = code.call(
            "masked_input, masked_nats, masked_losses", masked_loss, mlm, vocab, ids, rate, seed,
            via=lambda *_: masked_scored(sentence, rate, seed, mlm, vocab, ids),
            note="001 §1.9: the masked LM is scored only where [MASK] replaced a character")
        masked_text = code.call("masked_text", vocab.decode, masked_in)
        code.figure('px.bar(x=[f"{i}:{c}" for i, c in enumerate(vocab.decode(ids))], y=masked_losses, '
                    'labels={"x": "character", "y": "nats"}, '
                    'title=f"Masked LM loss {masked_nats:.3f} nats: only the masked positions")')
        chars = [f"{i}:{'␣' if c == ' ' else c}" for i, c in enumerate(sentence)]  # a blank label reads as missing
        st.markdown(f"**Masked-LM input** (▒ is [MASK]): `{masked_text}`")
        left, right = st.columns([3, 2])
        with left:
            figures.show(figures.bars(chars[1:], {"causal LM: −log p(x_t | x_<t)": causal_losses.tolist()},
                                      title=f"Causal LM loss {causal_nats:.3f} nats: all {len(ids) - 1} positions",
                                      y_title="nats", height=300))
            figures.show(figures.bars(chars, {"masked LM: −log p(x_t | unmasked)": masked_losses.tolist()},
                                      title=f"Masked LM loss {masked_nats:.3f} nats: only the "
                                            f"{int((~masked_losses.isnan()).sum())} masked positions",
                                      y_title="nats", height=300))
        with right:
            equations(
                ("003 eq. 65, GPT's L1", r"L_1 = \sum_i \log P(u_i \mid u_{i-k}, \dots, u_{i-1})"),
                ("001 §1.9, masked LM", r"L_{\mathrm{MLM}} = -\!\!\sum_{i \in \mathcal{M}} "
                                        r"\log P(x_i \mid x_{\setminus \mathcal{M}})"),
                ("003 eq. 68-69, GPT's L2", r"L_2 = \sum_{(x, y)} \log \mathrm{softmax}(h_l^m W_y)_y"),
                ("GPT §3.2 (003 eq. 70 with λ)", r"L_3 = L_2 + \lambda\, L_1"),
            )
            baseline = code.call("baseline", unigram_loss, vocab, via=lambda _: unigram_baseline())
            st.caption("Written here as losses (negated). 003 names these objectives differently: see below.")
            st.caption(
                f"On held-out text the causal LM scores {causal_extra['metrics']['held_out_loss']:.2f} nats per "
                f"character and the masked LM {mlm_extra['metrics']['held_out_loss']:.2f} per masked character; "
                f"character frequencies alone give {baseline:.2f}. Both have learned spelling and common "
                "words from 300 news stories, the masked one from both sides (it reads up to "
                f"{mlm.config.max_seq_len} characters). Neither knows grammar or facts beyond a few words."
            )

    st.subheader("Fine-tuning: L3 = L2 + λ L1")
    clf, _, fine = code.call("clf, clf_vocab, fine", load_classifier, via=finetuned_classifier,
                             note="003 eq. 68: the causal LM fine-tuned with a head W_y on a labelled task")
    st.markdown(
        f"The LM was fine-tuned on a small labelled task built from the corpus: is a {96}-character snippet as "
        f"written, or are its words shuffled? Held-out accuracy {fine['metrics']['held_out_accuracy']:.1%} "
        f"(400 snippets, λ = {fine['metrics']['lambda']}): a small model, wrong on "
        f"{1 - fine['metrics']['held_out_accuracy']:.0%} of them and less sure on sentences much shorter than its snippets. The default sentence, held out from training, is one "
        "it gets right: compare P(as written) for both versions."
    )
    f1, f2 = st.columns(2)
    lam = page.slider("Weight λ of L1", "lam", 0.0, 2.0, 0.5, 0.1, where=f1)
    version = page.select("Text", "version", ["As written", "Words shuffled"], where=f2)
    with page.guard():
        as_written = version == "As written"
        if as_written:
            prompt_ids(page, sentence, vocab, causal_lm.config.max_seq_len - 1)  # an empty sentence is refused here too
            text, text_ids = sentence, ids
        else:
            text = code.call("shuffled", shuffled_words, sentence, seed, note="the negative class: its words shuffled")
            prompt_ids(page, text, vocab, causal_lm.config.max_seq_len - 1)  # says which characters are unknown
            text_ids = code.call("shuffled_ids", vocab.encode, text)
        losses = code.call("losses", fine_tuning_losses, clf, text_ids, as_written, lam,
                           via=lambda *_: fine_tuning_scored(text, as_written, lam, clf, text_ids),
                           note="003 eq. 68-70: L2 on the label, L1 on the same text, L3 = L2 + λ L1")
        st.markdown(f"`{text}`")
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("L1 (LM loss)", f"{losses['L1']:.3f}")
        m2.metric("L2 (classification loss)", f"{losses['L2']:.3f}")
        m3.metric(f"L3 = L2 + {lam:g} L1", f"{losses['L3']:.3f}")
        m4.metric("P(as written)", f"{losses['P(as written)']:.1%}")
        errata_panel.show(errata.gpt_objective_names(losses["L1"], losses["L2"], lam,
                                                     "the fine-tuned model's losses on the text above"))


body()
