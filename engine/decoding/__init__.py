"""Decoding: greedy, beam and exhaustive search as a tree, and the scores that rank what they find."""
