import random

import streamlit as st
import torch

from engine import errata
from engine.errors import InputError
from engine.transformer.objectives import causal_targets, mlm_batch, positionwise_loss, shuffle_words
from ui import errata_panel, figures
from ui.loaders import char_model, finetuned_classifier, prompt_ids, unigram_baseline
from ui.page import Page, equations

page = Page("objectives")
page.intro(
    "The same sentence under two pre-training objectives (001 §1.9). A causal LM predicts every next character "
    "from the ones before it, so every position contributes to its loss. A masked LM sees the whole sentence "
    "with some characters replaced by [MASK] and is scored only where it had to fill one in. Each objective "
    "here has its own trained model from the same script."
)
c1, c2, c3 = st.columns([3, 1, 1])
# a held-out sentence about as long as the fine-tuning task's snippets, which the classifier below gets right
sentence = page.text("Sentence", "text", "The deciding rubber was to be Rafter's farewell match before taking an "
                     "indefinite break from the sport.", 120, where=c1)
rate = page.slider("Masked fraction", "rate", 0.05, 0.5, 0.15, 0.05, where=c2)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c3)

causal_lm, vocab, causal_extra = char_model("causal")
mlm, _, mlm_extra = char_model("mlm")
with page.guard():
    ids, sentence = prompt_ids(page, sentence, vocab, min(causal_lm.config.max_seq_len, mlm.config.max_seq_len) - 1)
    if len(ids) < 2:
        raise InputError("type at least two characters: the causal loss predicts each one from the one before")
    inputs, targets = causal_targets(ids[None])
    with torch.no_grad():
        causal = positionwise_loss(causal_lm, inputs[0], targets[0])
        masked_in, masked_targets = mlm_batch(ids[None], vocab.mask_id, rate, torch.Generator().manual_seed(seed))
        masked = positionwise_loss(mlm, masked_in[0], masked_targets[0])
    chars = [f"{i}:{'␣' if c == ' ' else c}" for i, c in enumerate(sentence)]  # a blank label reads as missing
    st.markdown(f"**Masked-LM input** (▒ is [MASK]): `{vocab.decode(masked_in[0].tolist())}`")
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.bars(chars[1:], {"causal LM: −log p(x_t | x_<t)": causal.per_position.tolist()},
                                  title=f"Causal LM loss {causal.loss:.3f} nats: all {len(ids) - 1} positions",
                                  y_title="nats", height=300))
        figures.show(figures.bars(chars, {"masked LM: −log p(x_t | unmasked)": masked.per_position.tolist()},
                                  title=f"Masked LM loss {masked.loss:.3f} nats: only the "
                                        f"{int((masked_targets != -100).sum())} masked positions",
                                  y_title="nats", height=300))
    with right:
        equations(
            ("003 eq. 65, GPT's L1", r"L_1 = \sum_i \log P(u_i \mid u_{i-k}, \dots, u_{i-1})"),
            ("001 §1.9, masked LM", r"L_{\mathrm{MLM}} = -\!\!\sum_{i \in \mathcal{M}} \log P(x_i \mid x_{\setminus "
                                    r"\mathcal{M}})"),
            ("003 eq. 68-69, GPT's L2", r"L_2 = \sum_{(x, y)} \log \mathrm{softmax}(h_l^m W_y)_y"),
            ("GPT §3.2 (003 eq. 70 with λ)", r"L_3 = L_2 + \lambda\, L_1"),
        )
        st.caption("Written here as losses (negated). 003 names these objectives differently: see below.")
        st.caption(
            f"On held-out text the causal LM scores {causal_extra['metrics']['held_out_loss']:.2f} nats per "
            f"character and the masked LM {mlm_extra['metrics']['held_out_loss']:.2f} per masked character; "
            f"character frequencies alone give {unigram_baseline():.2f}. Both have learned spelling and common "
            "words from 300 news stories, the masked one from both sides (it reads up to "
            f"{mlm.config.max_seq_len} characters). Neither knows grammar or facts beyond a few words."
        )

st.subheader("Fine-tuning: L3 = L2 + λ L1")
clf, _, fine = finetuned_classifier()
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
    text = sentence if version == "As written" else shuffle_words(sentence, random.Random(seed))
    ids, _ = prompt_ids(page, text, vocab, causal_lm.config.max_seq_len - 1)
    with torch.no_grad():
        losses = clf(ids[None], torch.tensor([int(version == "As written")]), lam)
    probability = float(torch.softmax(losses["logits"][0], -1)[1])
    st.markdown(f"`{text}`")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("L1 (LM loss)", f"{float(losses['L1']):.3f}")
    m2.metric("L2 (classification loss)", f"{float(losses['L2']):.3f}")
    m3.metric(f"L3 = L2 + {lam:g} L1", f"{float(losses['L3']):.3f}")
    m4.metric("P(as written)", f"{probability:.1%}")
    errata_panel.show(errata.gpt_objective_names(float(losses["L1"]), float(losses["L2"]), lam,
                                                 "the fine-tuned model's losses on the text above"))
