import numpy as np
import streamlit as st

from engine.llm import generation, inspection
from engine.llm.model import GGUF_PAIRING
from engine.llm.smollm import SmolLM, load
from engine.llm.tokenizer import visible
from engine.positions.rope import PAIRINGS
from ui import batching, boundary, figures, tables
from ui.llm import INSIDE, LENS, QUESTION, generations, inside_view, perplexities, score
from ui.page import Page, equations, flag_unknown_params
from ui.smollm import smollm
from ui.snippet import Name

MOSAIC = 12  # tokens in each thumbnail of the 30 x 9 overview
PASSAGE = ("The Moon is Earth's only natural satellite. It orbits at an average distance of 384,400 km, about "
           "thirty times the diameter of Earth, and always shows the same face to us, because its rotation is "
           "locked to its orbit.")


@st.cache_data(max_entries=32, show_spinner=False)
def neuron(ids: tuple[int, ...], layer: int, head: int, query: int, key: int) -> inspection.NeuronView:
    return inspection.neuron_view(smollm(), list(ids), layer, head, query, key)


def mosaic(attentions: np.ndarray, n: int) -> np.ndarray:
    """Every head's map over the last n tokens as one (L (n+1), H (n+1)) image, NaN between thumbnails."""
    L, H = attentions.shape[:2]
    tiles = np.full((L, H, n + 1, n + 1), np.nan)
    tiles[:, :, :n, :n] = attentions[:, :, -n:, -n:]
    return tiles.transpose(0, 2, 1, 3).reshape(L * (n + 1), H * (n + 1))[:-1, :-1]


page = Page("smollm")
page.intro(
    "SmolLM2-135M-Instruct (Hugging Face, 2024), a Llama-architecture model with 30 blocks, run by this "
    "project's own engine from its quantized GGUF file: every number below is computed here, from the "
    "tokenizer to the last logit. It is the Transformer of 000 §8.3 with the choices Llama made: RMSNorm "
    "instead of LayerNorm, RoPE instead of position embeddings (000 §8.6, base 100,000 as in 000's code), "
    "grouped-query attention with 9 query heads sharing 3 key-value heads (001's GQA appendix), a SwiGLU MLP, "
    "and the unembedding tied to the token embedding."
)


def last_tokens(lm: SmolLM, ids: list[int]) -> tuple[list[int], list[str], list[str]]:
    """The last INSIDE tokens, which the views inside the model read, with their texts and position labels."""
    shown = code.let("shown", lambda: ids[-INSIDE:], note="the last tokens, which the views read")
    texts = [visible(token.text) for token in lm.tokenizer.tokens(shown)]
    return shown, texts, [f"{len(ids) - len(shown) + i}:{text}" for i, text in enumerate(texts)]


def overview(lm: SmolLM, shown: list[int]) -> dict:
    return code.call("view", inspection.overview, lm, shown, via=lambda lm, ids: inside_view(tuple(ids), _lm=lm),
                     note="one forward pass: the next token's distribution, every head's attention, the logit lens")


def next_token(lm: SmolLM, ids: list[int]) -> None:
    """The next token's distribution and the prompt as tokens."""
    shown, _, _ = last_tokens(lm, ids)
    view = overview(lm, shown)
    code.let("next_tokens", lambda: [lm.tokenizer.decode([i]) for i in view["next_ids"]],
             note="000 §8.3.4: softmax of the tied unembedding of RMSNorm(h_T), its 12 most likely tokens")
    code.figure('px.bar(x=next_tokens, y=view["next_probs"], title="p(next token): the 12 most likely")')
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.bars([visible(lm.tokenizer.decode([i])) for i in view["next_ids"]],
                                  {"p": view["next_probs"]}, y_title="probability",
                                  title=f"p(next token | {len(ids)} tokens): the 12 most likely of 49,152"))
    with right:
        equations(("000 §8.3.4, tied unembedding", r"p(x_{T+1}) = \mathrm{softmax}\big(E\,"
                                                     r"\mathrm{RMSNorm}(h^{(30)}_T)\big)"),
                  ("RMSNorm (Llama; LayerNorm in 000 §8.3.3)",
                   r"\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}} \odot g"),
                  ("SwiGLU MLP (Llama)", r"\mathrm{MLP}(x) = W_{\text{down}}\big(\mathrm{silu}(W_{\text{gate}}x)"
                                         r" \odot W_{\text{up}}x\big)"))
    st.markdown(f"**The prompt as the model reads it: {len(ids)} tokens** (byte-level BPE from the GGUF's own "
                "49,152-token vocabulary and 48,900 merges; ␣ is a space, ⏎ a newline)")
    tokens = lm.tokenizer.tokens(ids)
    tables.dataframe({"position": list(range(len(ids))), "id": [t.id for t in tokens],
                      "token": [visible(t.text) for t in tokens], "vocabulary entry": [t.piece for t in tokens]},
                     hide_index=True, height=210)


def generate(lm: SmolLM, ids: list[int]) -> None:
    """Generation in one batch with every other student's (ui/batching.py)."""
    c1, c2, c3, c4, c5 = st.columns(5)
    temperature = page.slider("Temperature", "temp", 0.0, 2.0, 0.0, 0.05, help="0 is greedy", where=c1)
    top_k = page.slider("Top-k (0 = off)", "topk", 0, 200, 0, where=c2)
    top_p = page.slider("Top-p (1 = off)", "topp", 0.01, 1.0, 1.0, 0.01, where=c3,
                        help="keep the fewest most likely tokens whose probabilities reach p")
    n_new = page.slider("New tokens at most", "new", 1, generation.MAX_NEW_TOKENS, 60, where=c4)
    seed = page.slider("Seed", "seed", 0, 99, 0, where=c5)
    request = batching.request_of(ids, temperature, top_k, top_p, n_new, seed)
    code.slow(f"Up to {n_new} tokens at about {generation.STEP_S} s each on one core of a laptop CPU")
    step_args = (lm, ids, n_new, temperature, request.top_k, request.top_p, seed)
    server = batching.batch_server(lm)
    button_column, together_column = st.columns([1, 4], vertical_alignment="center")
    together = together_column.empty()

    def count(text: str) -> None:
        together.markdown(f":material/groups: SmolLM2 on this server now: **{text}**",
                          help="Every student's Generate joins one batch: a decode step reads the weights "
                               "once for all of them")
    count(batching.together_text(server))
    answer = st.empty()
    if request not in generations() and button_column.button("Generate", icon=":material/play_arrow:",
                                                              type="primary", key="generate"):
        steps = batching.generate(lm, request, lambda steps: answer.code(
            lm.tokenizer.decode([s.token for s in steps]) + " ▌", language=None, wrap_lines=True), count)
        generations()[request] = steps
        count(batching.together_text(server))
    if request in generations():
        steps = code.call("steps", generation.generate, *step_args, via=lambda *_: generations()[request],
                          note="one forward pass of one token a step against the KV cache (000 §8.5)")
        code.let("answer", lambda: lm.tokenizer.decode([s.token for s in steps]))
        code.figure('px.bar(y=[s.probability for s in steps], x=[lm.tokenizer.decode([s.token]) for s in steps], '
                    'title="Each generated token\'s probability")')
        answer.code(lm.tokenizer.decode([s.token for s in steps]), language=None, wrap_lines=True)
        figures.show(figures.bars([f"{i + 1}:{visible(lm.tokenizer.decode([s.token]))}" for i, s in
                                   enumerate(steps)], {"p": [s.probability for s in steps]},
                                  y_title="probability", height=280,
                                  title="Each generated token's probability in the distribution it was drawn "
                                        "from"))
    else:
        code.later("steps", generation.generate, *step_args,
                   note="one forward pass of one token a step against the KV cache (000 §8.5)")
        answer.caption("Press Generate: tokens appear as they are computed, one forward pass of a single "
                       "token each against the KV cache (000 §8.5), in one batch with every other student's "
                       "generation on this server.")
    st.caption("Temperature divides the logits, top-k keeps the k largest, top-p then keeps the nucleus "
               "(Holtzman et al. 2020), in transformers' order; generation stops at <|im_end|>.")
    batching.class_figure(lm)


@boundary.fragment  # its sliders rerun this view alone
def attention(lm: SmolLM, ids: list[int]) -> None:
    """One head's attention map, and every head's over the last tokens."""
    shown, _, positions = last_tokens(lm, ids)
    view = overview(lm, shown)
    cfg = lm.config
    left, right = st.columns([3, 2])
    with right:
        layer = page.slider("Layer", "layer", 1, cfg.n_layers, 1)
        head = page.slider("Query head", "head", 1, cfg.n_heads, 1)
        group = cfg.n_heads // cfg.n_kv_heads
        kv_head = (head - 1) // group
        sharing = ", ".join(str(kv_head * group + h + 1) for h in range(group))
        st.caption(f"Query head {head} reads key-value head {kv_head + 1} of {cfg.n_kv_heads}, as query heads "
                   f"{sharing} do: grouped-query attention caches 3 heads' K and V instead of 9.")
    attention = code.let("attention", lambda: view["attentions"][layer - 1, head - 1],
                         note="layer and head counted from 1, as on the page")
    code.figure('px.imshow(attention, labels={"x": "key", "y": "query"}, title="Attention")')
    with left:
        figures.show(figures.heatmap(attention, positions, positions,
                                     annotate=False, zmax=None, height=520, x_title="key", y_title="query",
                                     title=f"Layer {layer}, query head {head}"
                                           + (f" (last {INSIDE} tokens)" if len(ids) > INSIDE else "")))
    n = min(MOSAIC, len(shown))
    figures.show(figures.heatmap(mosaic(view["attentions"], n), [], [], annotate=False, zmax=None, height=900,
                                 showscale=False, categorical=False,
                                 title=f"All 30 layers (rows) × 9 heads (columns), each over the last {n} tokens"))


def logit_lens(lm: SmolLM, ids: list[int]) -> None:
    """Each layer's residual read as the next token."""
    shown, _, positions = last_tokens(lm, ids)
    view = overview(lm, shown)
    cfg = lm.config
    code.note("the logit lens: each layer's residual through the final RMSNorm and the tied unembedding")
    code.let("lens_tokens", lambda: [[lm.tokenizer.decode([i]) for i in row] for row in view["lens_ids"]])
    code.figure('px.imshow(view["lens_probs"], text_auto=False, labels={"x": "position", "y": "after layer"}, '
                'title="Logit lens")')
    lens_text = tuple(tuple(visible(lm.tokenizer.decode([i])) for i in row) for row in view["lens_ids"])
    figures.show(figures.heatmap(view["lens_probs"], positions[-LENS:], list(range(1, cfg.n_layers + 1)),
                                 cell_text=lens_text, zmax=1.0, height=900, x_title="position",
                                 y_title="after layer",
                                 title="Logit lens: each layer's residual read through the final RMSNorm "
                                       "and the tied unembedding"))
    st.caption("Each cell is the most likely next token if the model stopped after that layer, coloured by "
               "its probability (nostalgebraist 2020). The last row is the model's own prediction.")


@boundary.fragment  # its sliders rerun this view alone
def neuron_view(lm: SmolLM, ids: list[int]) -> None:
    """One score taken apart by RoPE's pairs."""
    shown, texts, _ = last_tokens(lm, ids)
    cfg = lm.config
    c1, c2, c3, c4 = st.columns(4)
    nlayer = page.slider("Layer", "nlayer", 1, cfg.n_layers, 1, where=c1)
    nhead = page.slider("Query head", "nhead", 1, cfg.n_heads, 1, where=c2)
    query = page.slider("Query position", "query", 0, len(shown) - 1, len(shown) - 1, where=c3)
    key = page.slider("Key position", "key", 0, query, 0, where=c4) if query else 0
    code.let("layer_index, head_index", lambda: (nlayer - 1, nhead - 1))
    # the indices by name (Name): a small int has no identity to be named by, so it would be written as a
    # literal, cut off from nlayer and nhead
    nv = code.call("nv", inspection.neuron_view, lm, shown, Name("layer_index"), Name("head_index"), query, key,
                   via=lambda lm, ids, _layer, _head, query, key: neuron(tuple(ids), nlayer - 1, nhead - 1,
                                                                         query, key),
                   note="000 eq. 106-109: q and k after RoPE, their products by pair, the score")
    code.let("score, pair_sums", lambda: (nv.score, nv.pair_sums))
    code.figure('px.bar(y=nv.pair_sums, title="The score by rotated pair, fastest frequency first")')
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.bars([str(i) for i in range(cfg.head_dim // 2)],
                                  {"q̃ᵢ·k̃ᵢ/√d of the pair": nv.pair_sums.tolist()}, y_title="contribution",
                                  title=f"Score of “{texts[query]}” → “{texts[key]}” = {nv.score:.3f}: its 32 "
                                        "rotated pairs, fastest frequency first"))
        figures.show(figures.bars([str(i) for i in range(cfg.head_dim)],
                                  {"q̃ (after RoPE)": nv.q_rot.tolist(), "k̃ (after RoPE)": nv.k_rot.tolist(),
                                   "q̃ ⊙ k̃ / √d": nv.products.tolist()}, y_title="value", height=300,
                                  title="Per dimension: pairs (2i, 2i+1) turn together"))
    with right:
        weights = code.let("weights", lambda: nv.scores.softmax(0), note="the softmax over the query's row")
        st.metric("score q̃·k̃/√d", f"{nv.score:.4f}")
        st.metric("attention weight after the softmax over its row", f"{float(weights[key]):.4f}")
        st.caption(f"Query head {nhead} reads key-value head {nv.kv_head + 1}. The sum of the bars is the "
                   "score; the softmax of the row of scores is the attention map's row. Pair i turns by "
                   "θ_i = 100000^(−2i/64) radians per position (000 eq. 100-102): pair 0 a full radian, "
                   "pair 31 about 1.4 × 10⁻⁵, so the pairs on the right barely tell positions apart.")
        equations(("000 eq. 106-109", r"\tilde q_m = R_m q_m,\ \ \tilde k_n = R_n k_n"),
                  ("000 §8.6, the score by pairs", r"\frac{\tilde q_m^\top \tilde k_n}{\sqrt{d}} = \sum_{i=0}^"
                                                  r"{d/2-1} \frac{\tilde q_{m,2i}\tilde k_{n,2i} + \tilde "
                                                  r"q_{m,2i+1}\tilde k_{n,2i+1}}{\sqrt d}"))


def perplexity(lm: SmolLM, ids: list[int]) -> None:
    """A passage scored with each RoPE pairing and base."""
    cfg = lm.config
    left, right = st.columns([3, 2])
    with right:
        passage = page.text("Text to score", "text", PASSAGE, max_chars=6000, area=True)
        pairing = page.select("RoPE pairing", "pairing", PAIRINGS, GGUF_PAIRING,
                              help="the GGUF stores q and k for interleaved pairs (2i, 2i+1)")
        base = page.select("RoPE base", "base", ["100000 (the file's)", "10000"])
    scored = perplexities().run("perplexity", passage, lambda report: score(lm, passage, report),
                                "Scoring the text four ways", estimate=3.0)
    chosen = code.call("chosen", generation.perplexity, lm, passage,
                       cfg.rope_base if base.startswith("100000") else 10000.0, pairing,
                       via=lambda lm, text, rope_base, pairing: scored[(pairing, rope_base)],
                       note="exp of the mean cross-entropy (000 §8.3) with this RoPE base and pairing")
    code.let("ppl, nll", lambda: (chosen.value, chosen.nll))
    code.figure('px.bar(y=nll, title=f"Perplexity {ppl:.2f}")')
    with left:
        scored_tokens = [visible(t.text) for t in lm.tokenizer.tokens(chosen.ids[1:])]
        figures.show(figures.bars([f"{i + 1}:{t}" for i, t in enumerate(scored_tokens)],
                                  {"−log p (nats)": chosen.nll.tolist()}, y_title="nats",
                                  title=f"Perplexity {chosen.value:.2f} with {pairing} pairs, base {base}"))
    with right:
        tables.dataframe({"pairing": [p for p, _ in scored], "base": [f"{b:,.0f}" for _, b in scored],
                          "perplexity": [round(s.value, 2) for s in scored.values()]}, hide_index=True)
        st.caption("With the wrong pairing each head rotates the wrong dimensions together: positions "
                   "scramble and perplexity rises. The base changes every angle by a smaller amount.")
        equations(("the mean is the cross-entropy loss of 000 §8.3's code; its exp, the perplexity, is not "
                   "in the notes (Jurafsky & Martin, ch. 3)",
                   r"\mathrm{PPL} = \exp\Big(-\frac{1}{T-1} \sum_{t=2}^{T} \log p(x_t \mid x_{<t})\Big)"))


VIEWS = {"Next token": next_token, "Generate": generate, "Attention": attention, "Logit lens": logit_lens,
         "Neuron view": neuron_view, "Perplexity": perplexity}

prompt_column, chat_column, view_column = st.columns([4, 1, 1.4], vertical_alignment="bottom")
prompt = page.text("Prompt", "prompt", QUESTION, max_chars=8000, where=prompt_column)
chat = page.toggle("Chat template", "chat", True, where=chat_column,
                   help="wrap the prompt in the instruct model's <|im_start|> turns, as a chat app does")
view_name = page.select("Show", "view", list(VIEWS), where=view_column,
                        help="each view computes only what it draws; the URL keeps the choice")
if smollm() is None:
    flag_unknown_params()
    st.stop()
code = page.code
lm = code.call("lm", load, via=smollm)
with page.guard():
    # cut is left unnamed: the snippet would write every 0 as `cut` (ui/code.py names values by identity)
    encoded = code.call("encoded", generation.prompt_ids, lm, prompt, chat,
                        note="byte-level BPE, inside the chat template when chat: the ids and how many were cut")
    ids, cut = code.let("ids", lambda: encoded[0]), encoded[1]
    if cut:
        page.notice(f"The prompt is {cut + len(ids):,} tokens; its first {cut:,} are cut so that it fits the "
                    f"{generation.MAX_PROMPT_TOKENS:,} this page reads "
                    f"(SmolLM2's context is {lm.config.context_length:,}).")
    VIEWS[view_name](lm, ids)
