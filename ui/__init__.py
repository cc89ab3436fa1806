"""Shared Streamlit pieces: page conventions, figure builders, input parsing, the page catalog."""
