"`tools/greedy_sweep.py --add`: evaluations of other sessions join greedy.csv only against the same SFT rows."
import importlib.util
from pathlib import Path
import pandas as pd
import pytest

spec = importlib.util.spec_from_file_location('greedy_sweep', Path(__file__).parents[1] / 'tools' / 'greedy_sweep.py')
gs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gs)

def rows(*runs, sft_share=0.75):
    return pd.DataFrame([{'run': r, 'role': role, 'share_vs_conceder': sft_share if r == 'sft' else (7 + i) / 10}
                         for i, r in enumerate(('sft',) + runs) for role in ('buyer', 'seller')])

def test_add_keeps_old_runs_and_replaces_reevaluated_ones():
    old, new = rows('a', 'b'), rows('b', 'c')
    got = gs.merged(old, new)
    assert got.run.tolist() == ['sft', 'sft', 'a', 'a', 'b', 'b', 'c', 'c']
    assert got[got.run == 'b'].share_vs_conceder.tolist() == [0.8, 0.8]      # new's row for b, not old's (0.9)
    assert gs.merged(got, new).equals(got)                                   # adding the same evaluation again: same

def test_add_refuses_another_sft_model():
    with pytest.raises(SystemExit, match='SFT rows differ'):
        gs.merged(rows('a'), rows('c', sft_share=0.74))
