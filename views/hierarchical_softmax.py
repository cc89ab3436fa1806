import math

import numpy as np
import streamlit as st

from engine.embeddings.huffman import huffman_tree, mean_depth, path_steps, vocabulary_distribution
from engine.embeddings.train import load_shipped_word2vec
from ui import figures
from ui.loaders import checkpoint_vectors, word2vec_checkpoint
from ui.page import Page, equations

page = Page("hierarchical_softmax")
code = page.code
model, extra = code.call("model, extra", load_shipped_word2vec, "lee_hierarchical", via=word2vec_checkpoint,
                         note="skip-gram trained with hierarchical softmax (000 §4.3) on the Lee corpus")
counts = code.let("counts", lambda: model.vocab.counts)
tree = code.call("tree", huffman_tree, counts, note="the Huffman tree of the word counts: frequent words near the root")
V = len(model.vocab)
page.intro(
    f"A skip-gram model trained with hierarchical softmax on the Lee news corpus ({V:,} words). The "
    f"{V:,} words are the leaves of a Huffman tree built from their counts; each of the {V - 1:,} inner nodes "
    "holds a vector v′. A word's probability is the product of one sigmoid per node on its path, so no "
    "sum over the vocabulary is needed, and the leaves' probabilities still add up to 1."
)
c1, c2 = st.columns(2)
context = page.text("Context word c (its vector is h)", "c", "police", max_chars=40, where=c1).strip().lower()
word = page.text("Word w at the leaf", "word", "officers", max_chars=40, where=c2).strip().lower()
code.setting("c", context, "Context word c")  # the words as used, trimmed and lower-cased: the Code view names them
code.setting("word", word, "Word w at the leaf")
c = context  # the setting's name, which h's line reads
with page.guard():
    vocabulary = code.call("vocabulary", model.word_vectors, via=lambda: checkpoint_vectors("lee_hierarchical"))
    h = code.let("h", lambda: model.input_vectors[vocabulary.id(c)], note="h: the context word's input vector")
    w = code.call("leaf", vocabulary.id, word)
    node_vectors = code.let("node_vectors", lambda: model.output_vectors,
                            note="v′: one vector per inner node, (V − 1, d)")
    steps = code.call("steps", path_steps, tree, node_vectors, h, w,
                      note="000 eq. 23-24: one sigmoid per node on the path, branch = +1 LEFT, −1 RIGHT")
    code.let("factors", lambda: [step.probability for step in steps])
    probability = code.let("probability", lambda: steps[-1].reached, note="000 eq. 24: their product, p(w | c)")
    nodes = [figures.TreeNode("root", None, "root", "every word: p = 1", 0.0)]
    parent, reached = "root", 1.0
    for j, step in enumerate(steps):
        last = j + 1 == len(steps)
        child = "leaf" if last else f"n{j}"
        hover = (f"node n(w, {j + 1}) = inner node {step.node}<br>{'LEFT' if step.branch > 0 else 'RIGHT'}: "
                 f"branch {step.branch:+d}<br>v′·h = {step.score:.4f}<br>σ(branch · v′·h) = {step.probability:.4f}"
                 f"<br>product so far {step.reached:.4g}")
        # short labels: leaves of neighbouring branches sit close together, the last two side by side
        taken = figures.TreeNode(child, parent, f"“{word}”<br>{step.reached:.2g}" if last else f"{step.probability:.2f}",
                                 hover, math.log10(step.reached))
        left_out = reached * (1 - step.probability)
        words_there = f"{step.words_left_out:,} word{'s' if step.words_left_out > 1 else ''}"
        other = figures.TreeNode(f"other{j}", parent, f"{step.words_left_out:,}", f"the branch not taken: "
                                 f"{words_there}, p = {left_out:.4g}", math.log10(left_out), faded=True)
        nodes += [taken, other] if step.branch > 0 else [other, taken]  # LEFT child drawn on the left
        parent, reached = child, step.reached
    node_vectors_64 = code.let("node_vectors_64", lambda: node_vectors.double(),
                               note="000 eq. 24 at every leaf, in float64 so that the sum of eq. 25 is exact")
    h_64 = code.let("h_64", lambda: h.double())
    distribution = code.call("distribution", vocabulary_distribution, tree, node_vectors_64, h_64)
    total = code.let("total", lambda: float(distribution.sum()), note="000 eq. 25: they add up to 1")
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.tree(nodes, f"Path of “{word}”: {len(steps)} sigmoids from the root, LEFT on the left",
                                  colour_title="log₁₀ p", down=True))
        st.caption("Each node on the path is labelled with σ(branch · v′·h) of the branch taken; hover for v′·h "
                   "and the running product. Faded leaves stand for the words under the branch not taken, labelled with "
                   "how many there are.")
    with right:
        equations(
            ("000 eq. 23", r"\operatorname{branch} = \begin{cases} +1 & \text{LEFT} \\ -1 & \text{RIGHT} \end{cases}"),
            ("000 eq. 24", r"\Pr(w \mid c) = \prod_{j=1}^{L(w)-1} \sigma\big(\operatorname{branch}_j\, v'^{\top}_{n(w,j)} h\big)"),
            ("000 eq. 25", r"\sum_{w \in \mathcal{V}} \Pr(w \mid c) = 1"),
        )
        st.metric(f"p(“{word}” | “{context}”), product along the path", f"{probability:.6g}")
        st.metric(f"Σ p(w | c) over all {V:,} leaves", f"{total:.10f}")
    top = distribution.topk(12).indices.tolist()
    code.figure(f"best = distribution.topk(12).indices\n"
                f"px.bar(x=[vocabulary.words[i] for i in best], y=distribution[best],\n"
                f"       labels={{'x': 'w', 'y': 'p(w | c)'}}, title='Most likely words near {context}')")
    figures.show(figures.bars([model.vocab.words[i] for i in top], {"p(w | c)": distribution[top].tolist()},
                              title=f"Most likely words near “{context}”", y_title="p(w | c)"))
st.subheader("Cost per prediction: V against log₂ V")
mean_path = code.call("mean_path", mean_depth, tree, counts, note="sigmoids per word over running text, and at most")
longest_path = code.let("longest_path", lambda: int(tree.depth.max()))
sizes = np.unique(np.logspace(1, 6, 26).astype(int))
figures.show(figures.points_and_curves(
    {"this tree: mean path over running text": ([V], [mean_path]), "this tree: longest path": ([V], [longest_path])},
    {"full softmax: V dot products": (sizes, sizes), "balanced tree: log₂ V sigmoids": (sizes, np.log2(sizes))},
    title="Work per word", x_title="vocabulary size V", y_title="dot products", log_axes=True))
st.caption(f"Huffman coding puts frequent words near the root: over running text a word of this corpus costs "
           f"{mean_path:.1f} sigmoids on average, against log₂ {V:,} = {math.log2(V):.1f} for "
           "a balanced tree and a full softmax's V.")
