import numpy as np
import streamlit as st
import torch

from engine.transformer import sampler
from engine.transformer.model import attention_maps, head_attention
from engine.transformer.train import load_lm, unigram_loss
from ui import boundary, figures
from ui.loaders import char_model, char_sampler_weights, prompt_ids, unigram_baseline
from ui.page import Page, equations


@st.cache_data(max_entries=256, show_spinner=False)
def sampled(_weights: sampler.Weights, prompt: list[int], n_new: int, temperature: float, top_k: int | None,
            seed: int) -> list[int]:
    """The sampled continuation's ids, the same for every visitor who asks for it (the default one first), drawn by
    the compiled sampler: the torch loop gave up the GIL some 70 times a character and waited behind every other
    session each time (benchmarks/gil_convoy.py). One set of weights, so they are left out of the key."""
    return sampler.sample(_weights, prompt, n_new, temperature, top_k, seed)


@st.cache_data(max_entries=256, show_spinner=False)
def prompt_attention(prompt: tuple[int, ...]) -> np.ndarray:
    """Every layer's and head's attention over the prompt, (layers, heads, T, T)."""
    model, _, _ = char_model("causal")
    return torch.stack(attention_maps(model, torch.tensor(prompt))).numpy()


def cached_head(model, idx: torch.Tensor, layer: int, head: int) -> np.ndarray:
    """head_attention through the page's cache of every head's map, so moving the sliders computes nothing."""
    return prompt_attention(tuple(idx.tolist()))[layer - 1, head - 1]


@boundary.fragment
def attention_panel(ids: torch.Tensor) -> None:
    """The heatmap with its layer and head: moving either reruns only this part of the page."""
    figure_slot = st.container()
    a1, a2 = st.columns(2)
    layer = page.slider("Layer", "layer", 1, cfg.n_layers, cfg.n_layers, where=a1)
    head = page.slider("Head", "head", 1, cfg.n_heads, 1, where=a2)
    shown = code.let("shown", lambda: ids[-40:], note="the last 40 characters: a 40 x 40 map stays readable")
    attention = code.call("attention", head_attention, model, shown, layer, head, via=cached_head,
                          note="000 eq. 79-80: one head's causal attention, softmax(QK^T / sqrt(d_k) + M)")  # (T, T)
    labels = [f"{i}:{c}" for i, c in enumerate(vocab.decode(shown.tolist()))]
    with figure_slot:
        figures.show(figures.heatmap(
            attention, labels, labels, annotate=False, zmax=None, height=520,
            title=f"Attention over the prompt: layer {layer}, head {head}"
                  + (" (last 40 characters)" if len(ids) > 40 else ""),
            x_title="key character", y_title="query character"))


page = Page("transformer_lm")
code = page.code
model, vocab, extra = code.call("model, vocab, extra", load_lm, "causal", via=char_model,
                                note="000 §8.3: the trained character TransformerLM and its training record")
cfg = model.config
page.intro(
    f"The TransformerLM of 000 §8.3, trained by this project on the Lee corpus of news stories that gensim "
    f"installs: {cfg.n_layers} pre-LayerNorm blocks of {cfg.n_heads} heads, d_model = "
    f"{cfg.d_model}, a context of {cfg.max_seq_len} characters, one token per character."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3, c4, c5 = st.columns([3, 1, 1, 1, 1])
    prompt = page.text("Prompt", "prompt", "The fire ", 2000, where=c1)
    temperature = page.slider("Temperature", "temp", 0.0, 2.0, 0.8, 0.05, help="0 is greedy", where=c2)
    top_k = page.slider("Top-k (0 = off)", "topk", 0, len(vocab), 0, where=c3)
    n_new = page.slider("New characters", "new", 0, 200, 120, where=c4)
    seed = page.slider("Seed", "seed", 0, 99, 0, where=c5)

    with page.guard():
        _, prompt = prompt_ids(page, prompt, vocab, cfg.max_seq_len - n_new)  # cut to the context, with notices
        ids = code.call("ids", vocab.encode, prompt)
        weights = code.call("weights", sampler.weights_of, model, via=lambda _: char_sampler_weights())
        new_ids = code.call("new_ids", sampler.sample, weights, code.let("prompt_ids", lambda: ids.tolist()), n_new,
                            temperature, top_k or None, seed, via=sampled,
                            note="p_i ∝ exp(z_i / T) over the top-k logits, one character at a time (T = 0: greedy)")
        generated = code.call("generated", vocab.decode, new_ids)

        left, right = st.columns([3, 2])
        with left:  # the figure first, its controls under it: on a projector it opens on the first screen
            attention_panel(ids)
            code.figure('labels = [f"{i}:{c}" for i, c in enumerate(vocab.decode(shown.tolist()))]\n'
                        'px.imshow(attention, x=labels, y=labels,'
                        ' labels={"x": "key character", "y": "query character"},'
                        ' title=f"Attention over the prompt: layer {layer}, head {head}")')
        with right:
            st.markdown("**Generated**")
            st.code(prompt + "⟶" + generated, language=None, wrap_lines=True)
            equations(
                ("000 §8.3.3, pre-LayerNorm block", r"x \leftarrow x + \mathrm{Attn}(\mathrm{LN}_1(x)),\quad "
                                                    r"x \leftarrow x + \mathrm{MLP}(\mathrm{LN}_2(x))"),
                ("000 eq. 79-80, causal", r"A = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\ "
                                          r"M_{ij} = -\infty \text{ for } j > i"),
                ("sampling", r"p_i \propto \exp(z_i / T)\ \text{over the top-}k\ \text{logits}"),
            )
            metrics = extra["metrics"]
            held_out = code.let("held_out_loss", lambda: extra["metrics"]["held_out_loss"],
                                note="nats per character on the last 10% of the corpus, against frequencies alone")
            baseline = code.call("baseline", unigram_loss, vocab, via=lambda _: unigram_baseline())
            st.metric("Held-out loss (last 10% of the corpus)", f"{held_out:.3f} nats/char",
                      f"{held_out - baseline:.2f} against character frequencies alone", delta_color="inverse")
            st.caption("What it can do: spell common words, put spaces and capitals where English does, copy names "
                       "from the prompt. What it cannot: make sense beyond a few words. 300 news stories are far too "
                       "little text, and 0.9M parameters too few, for grammar or facts.")
            curve = extra["loss_curve"]
            step = max(1, len(curve) // 150)
            smoothed = [sum(curve[i:i + step]) / len(curve[i:i + step]) for i in range(0, len(curve), step)]
            figures.show(figures.lines(list(range(1, len(curve) + 1, step)), {"training loss": smoothed},
                                       title=f"Training: {metrics['steps']} steps in {metrics['train_seconds']:.0f} s",
                                       x_title="step", y_title="nats per character", markers=False, height=300))


body()
