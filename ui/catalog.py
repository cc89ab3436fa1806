"""Every built page, once: navigation, the home map and the test harnesses all read this list.

A new page is one line here; sections with no built page do not appear.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

SECTIONS = ("Embeddings", "Decoding", "Seq2seq attention", "Attention and Transformers", "Positions", "Efficiency",
            "The notes")


@dataclass(frozen=True)
class Source:
    code: str  # how pages cite it: "000 eq. 35"
    title: str
    author: str
    date: str
    covers: str


# the lecture notes (../shared/seeds) and the one paper a page cites outside them
SOURCES = (
    Source("000", "Mathematics in Modern Natural Language Modeling", "Richard Xu", "December 2025",
           "The newest and most complete edition: word vectors, decoding, seq2seq attention, the Transformer, "
           "KV caching and MLA, RoPE and decoupled RoPE, online softmax."),
    Source("001", "Transformer (notes with pseudocode)", "unsigned", "undated",
           "Attention as a database lookup, kernel regression, scoring functions, multi-head attention, "
           "positional encoding, pre-training; appendices on RoPE, MQA, GQA and MLA."),
    Source("002", "Understanding Language Models", "Han Cheol Moon", "August 2025",
           "Attention, masking and multi-head attention, MQA and GQA, permutation equivariance, sinusoidal "
           "encoding and RoPE with worked examples, inference with a KV cache."),
    Source("003", "Mathematics in Modern Natural Language Modeling (older edition)", "Richard Xu", "February 2023",
           "The 2023 edition of 000, with different equation numbers; cited for generative pre-training (§9)."),
    Source("004", "Transformer with PyTorch", "Richard Xu", "December 2025",
           "000's Transformer chapter on its own, numbered from eq. 1; cited for online softmax (§5)."),
    Source("FlashAttention-2", "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning",
           "Tri Dao", "2023", "The tiled attention loop order and its backward pass."),
)
SOURCE_CODES = re.compile(r"\b(?:" + "|".join(re.escape(source.code) for source in SOURCES) + r")\b")


@dataclass(frozen=True)
class PageInfo:
    slug: str  # file name in views/ and the URL path
    title: str
    section: str
    icon: str
    year: int  # when the idea appeared, for the home page's timeline
    summary: str
    follows: str  # the seed sections and equations the page computes
    main_control: str  # URL name of the control the benchmark and browser test move
    needs: tuple[str, ...] = ()  # slugs of the pages to read first: the home map's arrows

    @property
    def path(self) -> str:
        return f"views/{self.slug}.py"


PAGES = (
    PageInfo("one_hot", "One-hot vectors", "Embeddings", ":material/grid_on:", 1986,
             "Every word its own axis: all pairs √2 apart and orthogonal, next to dense GloVe vectors.",
             "000 §2.1 eq. 2", "text"),
    PageInfo("skipgram_pairs", "Skip-gram pairs", "Embeddings", ":material/swap_horiz:", 2013,
             "Windows, (target, context) pairs and the likelihood they are trained to raise.",
             "000 §2.2.2 eq. 5-10", "steps", needs=("one_hot",)),
    PageInfo("softmax_gradient", "Softmax and its gradient", "Embeddings", ":material/functions:", 2013,
             "p(o|c) over a whole vocabulary and ∂ log p/∂v_c = u_o − E[u], checked by autograd.",
             "000 §2.2.1-2.2.3 eq. 3-4, 11-12", "top", needs=("skipgram_pairs",)),
    PageInfo("word2vec_training", "Training word2vec", "Embeddings", ":material/model_training:", 2013,
             "Skip-gram or CBOW with full softmax, negative sampling or hierarchical softmax, trained live.",
             "000 §2.3, §3 eq. 13-16, §4.3", "k", needs=("softmax_gradient",)),
    PageInfo("hierarchical_softmax", "Hierarchical softmax", "Embeddings", ":material/account_tree:", 2005,
             "A Huffman tree over the vocabulary: a word's probability is a product along its path.",
             "000 §4.3 eq. 22-26", "word", needs=("softmax_gradient",)),
    PageInfo("analogies", "Analogies and neighbours", "Embeddings", ":material/compare_arrows:", 2014,
             "king − man + woman on 400k GloVe words and on ours; the standard evaluations.",
             "000 §2 eq. 1, §4.2 eq. 19-21", "topn", needs=("word2vec_training",)),
    PageInfo("projector", "Embedding projector", "Embeddings", ":material/scatter_plot:", 2008,
             "GloVe and our word2vec in 2-D or 3-D by PCA or t-SNE: a word's neighbours, an analogy's arrows.",
             "000 §2 eq. 1, §4.2", "word", needs=("analogies",)),
    PageInfo("fasttext", "FastText: sub-word vectors", "Embeddings", ":material/text_fields:", 2016,
             "A word as its character n-grams, hashed into buckets: vectors for misspelt and unseen words.",
             "000 §4.1 eq. 17-18", "word", needs=("word2vec_training",)),
    PageInfo("glove_counts", "GloVe: co-occurrence counts", "Embeddings", ":material/grid_view:", 2014,
             "The counts X_ij GloVe starts from, ratios P(k|i)/P(k|j) that tell words apart, and the weighting f(x).",
             "000 §4.2 eq. 19-21", "i", needs=("word2vec_training",)),
    PageInfo("glove_training", "Training GloVe", "Embeddings", ":material/model_training:", 2014,
             "Weighted least squares on log X_ij by AdaGrad, with and without biases, beside GloVe 6B.",
             "000 §4.2 eq. 19-21", "word", needs=("glove_counts",)),
    PageInfo("decoding_lab", "Decoding lab", "Decoding", ":material/account_tree:", 2016,
             "Greedy, beam and exhaustive search drawn as a tree; GNMT's length and coverage penalties.",
             "000 §6 eq. 27-41, Figure 1", "W", needs=("softmax_gradient",)),
    PageInfo("seq2seq_attention", "Encoder-decoder attention", "Seq2seq attention", ":material/translate:", 2014,
             "A trained GRU encoder-decoder normalising dates: which characters each output looks at.",
             "000 §7 eq. 42-47; 001 §1.5", "step", needs=("decoding_lab",)),
    PageInfo("coverage", "Coverage", "Seq2seq attention", ":material/layers:", 2016,
             "The running sum of attention and the loss that stops a decoder looking twice.",
             "000 §7.1 eq. 48-50", "step", needs=("seq2seq_attention",)),
    PageInfo("pointer_network", "Pointer network", "Seq2seq attention", ":material/sort:", 2015,
             "Outputs that are positions of the input: a network that sorts numbers.",
             "000 §7.2.1-7.2.2 eq. 51-52", "n", needs=("seq2seq_attention",)),
    PageInfo("pointer_sentinel", "Pointer sentinel LM", "Seq2seq attention", ":material/ads_click:", 2016,
             "A language model that copies: its softmax mixed by a sentinel with a pointer over its last L words.",
             "000 §7.2.4 eq. 53", "text", needs=("pointer_network",)),
    PageInfo("pointer_generator", "Pointer-generator (See et al.)", "Seq2seq attention", ":material/content_copy:",
             2017, "Copy or generate in a seq2seq decoder: a sigmoid gate g mixes the vocabulary with attention "
             "over the input.", "000 §7.2.3 eq. 52, eq. 53's mixture with See et al.'s gate", "text",
             needs=("pointer_sentinel",)),
    PageInfo("cross_attention", "Cross-attention", "Seq2seq attention", ":material/join:", 2017,
             "The same decoder attention as one matrix product: queries from one side, keys and values from the other.",
             "000 §8.4 eq. 84-85, eq. 57", "text", needs=("seq2seq_attention",)),
    PageInfo("kernel_regression", "Kernel regression", "Attention and Transformers", ":material/scatter_plot:", 1964,
             "Nadaraya-Watson regression: attention pooling before neural networks.", "001 §1.3", "h"),
    PageInfo("scoring_functions", "Scoring functions", "Attention and Transformers", ":material/functions:", 2014,
             "Dot, scaled dot, general and additive scores; masked softmax.",
             "001 §1.4; 000 §7 eq. 42-47, §8.1 eq. 55-57; 002 §2.1", "score",
             needs=("kernel_regression", "seq2seq_attention")),
    PageInfo("scaling", "Why divide by √d_k", "Attention and Transformers", ":material/compress:", 2017,
             "Logit spread, softmax entropy and gradients as d_k grows.", "000 eq. 56-57; 001 §1.4", "m",
             needs=("scoring_functions",)),
    PageInfo("multi_head", "Multi-head attention", "Attention and Transformers", ":material/view_column:", 2017,
             "Many queries at once, then heads split and concatenated, shape by shape.",
             "000 §8.1.4 eq. 60-62, §8.2-8.3 eq. 64-82; 002 §2.1.3; 001 §1.6", "T", needs=("scaling",)),
    PageInfo("permutation", "Permutation equivariance", "Attention and Transformers", ":material/shuffle:", 2017,
             "Shuffle the tokens: without positions the attention map only shuffles, A' = P A Pᵀ.",
             "002 §2.3.1", "C", needs=("multi_head",)),
    PageInfo("transformer_lm", "TransformerLM", "Attention and Transformers", ":material/edit_note:", 2018,
             "A trained character TransformerLM: sampling, and every layer's and head's attention.",
             "000 §8.3 eq. 64-83", "temp", needs=("multi_head",)),
    PageInfo("kv_cache", "KV cache", "Attention and Transformers", ":material/memory:", 2019,
             "Generation with and without a KV cache: same tokens, O(n³) against O(n²).",
             "000 §8.5 eq. 86-89; 002 §2.5", "new", needs=("transformer_lm",)),
    PageInfo("attention_variants", "MHA, MQA, GQA, MLA", "Attention and Transformers", ":material/hub:", 2023,
             "Four attention layers behind one interface: what each caches, how fast it decodes.",
             "000 §8.5.1 eq. 90-99; 001 appendices; 002 §2.2", "g", needs=("kv_cache",)),
    PageInfo("cache_sizes", "KV cache of real models", "Attention and Transformers", ":material/storage:", 2024,
             "Bytes per token and in total for GPT-2, Llama, Mistral, Falcon, SmolLM2 and DeepSeek.",
             "000 §8.5-8.5.1, §8.7", "ctx", needs=("attention_variants",)),
    PageInfo("smollm", "SmolLM2 inside", "Attention and Transformers", ":material/psychology:", 2024,
             "A real 135M-parameter Llama run by our engine: tokens, generation, every head, the logit lens.",
             "000 §8.3 eq. 64-83, §8.5 eq. 86-89, §8.6 eq. 100-109; 001 GQA appendix", "prompt",
             needs=("transformer_lm", "attention_variants")),
    PageInfo("objectives", "Training objectives", "Attention and Transformers", ":material/school:", 2018,
             "Causal against masked LM on one sentence; GPT's fine-tuning objective L3 = L2 + λ L1.",
             "001 §1.9; 003 §9 eq. 65-70", "rate", needs=("transformer_lm",)),
    PageInfo("sinusoidal", "Sinusoidal encoding", "Positions", ":material/waves:", 2017,
             "Sines and cosines per position; similarity by offset; a shift is a rotation.",
             "001 §1.7; 002 §2.3.2", "d", needs=("permutation",)),
    PageInfo("rope", "RoPE", "Positions", ":material/rotate_right:", 2021,
             "Rotary embeddings: both pairings, both bases, the relative property, decay and precision.",
             "000 §8.6 eq. 100-109; 001 RoPE appendix; 002 §2.3.3", "d", needs=("sinusoidal",)),
    PageInfo("decoupled_rope", "Decoupled RoPE", "Positions", ":material/call_split:", 2024,
             "Why RoPE breaks MLA's weight absorption, and the decoupled form that keeps it.",
             "000 §8.7 eq. 110-121", "T", needs=("rope", "attention_variants")),
    PageInfo("online_softmax", "Online softmax", "Efficiency", ":material/speed:", 2018,
             "Softmax in one pass: a running maximum and a rescaled sum, then attention for one query in one loop.",
             "000 §8.8 eq. 122-137; 004 §5", "step", needs=("scoring_functions",)),
    PageInfo("flash_attention", "FlashAttention", "Efficiency", ":material/grid_view:", 2022,
             "Attention tile by tile in SRAM: the online softmax on blocks, the backward pass from L, bytes moved.",
             "000 §8.8 eq. 137; FlashAttention-2", "step", needs=("online_softmax",)),
    PageInfo("attention_timing", "Timing attention", "Efficiency", ":material/timer:", 2022,
             "Naive, tiled, torch's fused SDPA and our Triton kernel timed against N, live and as recorded on a GPU.",
             "000 §8.8; FlashAttention-2", "upto", needs=("flash_attention",)),
    PageInfo("notes_errata", "Notes: disagreements and errata", "The notes", ":material/rule:", 2025,
             "Where the notes contradict each other or err, each computed: what is printed against what holds.",
             "000 eq. 42, 47, 95, 109, 120-121, 136-137; 001 §1.4-1.5, RoPE appendix; 002 §2.1; 003 §9 eq. 65-70",
             "show", needs=("rope", "decoupled_rope", "seq2seq_attention")),
)

BY_SLUG = {page.slug: page for page in PAGES}
START = "one_hot"  # where the home page says to begin


def pages_by_section() -> dict[str, list[PageInfo]]:
    """Built pages grouped in the order of SECTIONS, leaving out empty sections."""
    grouped = {section: [p for p in PAGES if p.section == section] for section in SECTIONS}
    return {section: pages for section, pages in grouped.items() if pages}
