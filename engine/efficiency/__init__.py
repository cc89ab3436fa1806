"""Efficiency: online softmax, tiled FlashAttention in torch, our Triton kernel, memory traffic and timing."""
