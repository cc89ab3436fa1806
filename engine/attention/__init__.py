"""Attention basics: kernel regression, scoring functions, scaling, multi-head, equivariance."""
