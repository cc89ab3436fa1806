"""ui/tables.dataframe: a page's columns reach st.dataframe as the Arrow table st.dataframe would have made of
them through pandas; columns Arrow cannot type reach it unchanged."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ui import tables


def test_columns_travel_as_the_arrow_table_pandas_would_give_and_mixed_ones_as_they_were(monkeypatch):
    sent = []
    monkeypatch.setattr(tables.st, "dataframe", lambda data, **options: sent.append((data, options)))
    columns = {"word": ["king", "queen"], "count": [3, 1], "cosine": [0.5, 0.25],
               "g": np.array([0.1, 0.9], dtype=np.float32)}
    tables.dataframe(columns, hide_index=True)
    mixed = {"": ["norm", "gap"], "value": [1.5, "n/a"]}
    tables.dataframe(mixed)
    (table, options), (untouched, _) = sent
    assert isinstance(table, pa.Table) and options == {"hide_index": True}
    through_pandas = pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False).replace_schema_metadata()
    assert table.cast(through_pandas.schema).equals(through_pandas)  # pandas' text is large_string: the same text
    assert untouched is mixed
