"""The training table of the details page (nbs/details.ipynb) from the recorded seeds (data/seeds/offline.csv): each
cell the median over seeds and, in brackets, the range (lowest–highest seed).

    python tools/seeds_table.py [SEEDS_CSV]"""
import sys
from pathlib import Path
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
MODELS = ('base', 'sft', 'grpo')
ROWS = [  # (label, measure pattern with {m} for the model and {r} for the role, per role?, as percent?)
    ('held-out loss per assistant token (SFT test split)', 'loss_{m}', False, False),
    ('accepts where the teacher accepted (test split)', 'accepts_{m}', False, True),
    ('first offer / listing, fresh teacher situations (median), buyer / seller', 'anchor_{m}_{r}', True, False),
    ('first offers within 0.3–1.7 × listing, buyer / seller', '{m}_{r}_band', True, True),
    ('corr(log first offer, log listing), buyer / seller', '{m}_{r}_logcorr', True, False),
    ('calls that are valid, buyer / seller', '{m}_{r}_valid', True, True),
    ('invalid calls a game, buyer / seller', '{m}_{r}_invalid', True, False),
    ('deal rate, buyer / seller', '{m}_{r}_deal', True, False),
    ('deals that break IR, buyer / seller', '{m}_{r}_ir', True, True),
    ('share, all three opponents, buyer / seller', '{m}_{r}_share', True, False),
    ('share, both roles, vs `conceder` (GRPO\'s opponent)', '{m}_seen_share', False, False),
    ('deal rate, both roles, vs `conceder`', '{m}_seen_deal', False, False),
    ('share, both roles, unseen (`boulware`, `linear`)', '{m}_unseen_share', False, False),
    ('deal rate, both roles, unseen', '{m}_unseen_deal', False, False),
    ('share, both roles, transfer (`symmetric`), vs `conceder`', '{m}_transfer_share', False, False)]

def cell(v: pd.Series, pct: bool) -> str:
    "Median [lowest–highest] of a measure's values over seeds."
    if v.empty or v.isna().all(): return ''
    num = lambda x: f'{x:.2f}' if x >= 0 else f'−{-x:.2f}'
    f = (lambda x: f'{100 * x:.0f} %') if pct else num
    return f'{f(v.median())} [{f(v.min())}–{f(v.max())}]'

def table(rec: pd.DataFrame) -> str:
    "The training table as markdown."
    by = {m: g['value'] for m, g in rec.groupby('measure')}
    get = lambda name, pct: cell(by.get(name, pd.Series(dtype=float)), pct)
    out = ['| measure | base | SFT | GRPO | teacher |', '|---|---|---|---|---|']
    for label, pat, roles, pct in ROWS:
        cells = []
        for m in (*MODELS, 'teacher'):
            if roles: parts = [get(pat.format(m=m, r=r), pct) for r in ('buyer', 'seller')]
            else: parts = [get(pat.format(m=m, r=''), pct)]
            cells.append(' / '.join(parts) if any(parts) else '')
        out.append(f"| {label} | {' | '.join(cells)} |")
    return '\n'.join(out)

if __name__ == '__main__':
    print(table(pd.read_csv(sys.argv[1] if len(sys.argv) > 1 else ROOT / 'data' / 'seeds' / 'offline.csv')))
