"""Sequence to sequence with attention: the date task, the encoder-decoder, coverage and pointers."""
