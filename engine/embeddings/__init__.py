"""Word embeddings: one-hot and word2vec training, GloVe vectors, analogies and their evaluations."""
