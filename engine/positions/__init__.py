"""Positional encodings."""
