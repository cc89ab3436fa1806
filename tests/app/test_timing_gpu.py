"""The Timing page on a server with a GPU: pressing Time measures there, through the server's line of heavy work,
our Triton kernel beside every SDPA backend (issue 48). Runs where CUDA and triton are; skipped elsewhere."""
import pytest
import torch

from engine.efficiency import sweep
from tests.app.conftest import assert_clean, open_page

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_time_measures_our_kernel_and_every_sdpa_backend_on_the_servers_gpu():
    at = open_page("attention_timing", upto="1024", repeats="2", block="64", dtype="bfloat16")
    assert_clean(at)
    assert any(f"On this server (cuda, {torch.cuda.get_device_name()})" in m.value for m in at.markdown)
    at.button[0].click().run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert {sweep.TRITON, sweep.SDPA_FLASH, sweep.SDPA_CUDNN} <= set(table["method"])
    ours = table[table["method"] == sweep.TRITON]
    assert sorted(ours["N"]) == [256, 512, 1024] and ours["median ms"].notna().all()
    flops = sweep.attention_flops(1, 1, 1024, 64, False)
    row = ours[ours["N"] == 1024].iloc[0]
    assert row["TFLOP/s"] == pytest.approx(flops / (row["median ms"] / 1e3) / 1e12)
