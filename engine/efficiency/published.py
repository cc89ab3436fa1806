"""Published attention throughputs, to draw beside our measurements as references and never as measurements.

From the FlashAttention-3 paper (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, 2024), figures 5 and 6: an H100
SXM5, bf16, the forward pass at N = 16k with batch × N = 16k tokens and d_model = 2048, the shape our benchmark
uses. TFLOP/s counted as ours are (4·B·H·N²·d, halved when causal).
"""
from __future__ import annotations

SOURCE = "FlashAttention-3 paper (Shah et al., 2024), H100 SXM5, bf16, forward"
N = 16384
# (head dim, causal) -> method -> TFLOP/s
FORWARD_TFLOPS = {
    (64, False): {"FlashAttention-3": 497, "cuDNN": 413},
    (64, True): {"FlashAttention-3": 473, "cuDNN": 388},
    (128, False): {"FlashAttention-3": 648, "cuDNN": 595},
    (128, True): {"FlashAttention-3": 616, "cuDNN": 539},
}


def forward_references(head_dim: int, causal: bool) -> dict[str, float]:
    """The published forward TFLOP/s at N = 16k for this setting, named "<method>, published"; empty if none."""
    return {f"{method}, published": tflops for method, tflops in FORWARD_TFLOPS.get((head_dim, causal), {}).items()}
