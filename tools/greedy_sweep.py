"""The greedy check of sweep runs: each GRPO model against the SFT model it started from, on held-out scenarios.

    bilateral evaluate --model sft=hf:SFT_MODEL --model RUN=hf:/tmp/sweep-grpo-RUN/model ... \
        --seen conceder --unseen boulware,linear --preset dollars --deadline 60 --games-per-pair 14 --out EVAL_DIR
    python tools/greedy_sweep.py EVAL_DIR ...       (several evaluations: their rows together, SFT's once)
    python tools/greedy_sweep.py --add EVAL_DIR ... (keep greedy.csv's other runs; SFT's rows must be the same)

Writes data/sweeps/grpo/greedy.csv: per run and role, over the three opponents, the (a) measures of issue 19 (valid
calls, invalid calls a game, first offers within 0.3–1.7 × listing, IR of deals, deal rate), and per run, over both
roles, the share against the training opponent (`conceder`, seen) and the paired gap to SFT [95 % CI over
scenarios], seen, unseen and against each opponent. `nbs/09c_grpo.ipynb` shows it next to the runs' learning curves."""
import io, json, sys
from pathlib import Path
import pandas as pd
from bilateral.analysis import role_table
from bilateral.evaluate import clustered, eval_rows, model_roles, sanity_table
from bilateral.findings import paired_gap

def valid_share(rows: pd.DataFrame, model: str, role: str) -> float:
    "1 − invalid calls / model calls of `model` in `role`."
    g = rows[rows[role] == model]
    return 1 - g[f'{role}_invalid_calls'].sum() / g[f'{role}_llm_calls'].sum()

def greedy_rows(eval_dir: str) -> list[dict]:
    s = json.loads((Path(eval_dir) / 'summary.json').read_text())
    if 'sft' not in s['models']: raise SystemExit(f'{eval_dir}: no model labelled sft to compare with')
    rows = eval_rows([dict(r, spec=s['models'][r['model']]) for r in s['runs']])
    san = sanity_table(rows.assign(group='all')).set_index(['model', 'role'])
    rt = role_table(rows).dropna(subset=['anchor_list'])
    band = rt.assign(b=rt['anchor_list'].between(0.3, 1.7)).groupby(['agent', 'role'])['b'].mean()
    seen = clustered(model_roles(rows[rows.group == 'seen']).assign(role='both'), ('model',), ['share'])
    seen = seen.set_index('model')
    opponent = rows['seller'].where(rows['buyer'].isin(list(s['models'])), rows['buyer'])
    parts = {'seen': rows.group == 'seen', 'unseen': rows.group == 'unseen'}
    parts |= {o: opponent == o for o in s['seen'] + s['unseen']}
    out = []
    for m in s['models']:
        gaps = {} if m == 'sft' else {g: paired_gap(rows[sel], m, 'sft', 'share') for g, sel in parts.items()}
        for role in ('buyer', 'seller'):
            x = san.loc[(m, role)]
            out.append({'run': m, 'role': role, 'games': int(x['games']), 'valid': valid_share(rows, m, role),
                        'invalid_per_game': x['invalid_per_game'], 'first_in_band': band[(m, role)],
                        'ir_of_deals': x['ir_of_deals'], 'deal_rate': x['deal_rate'],
                        'share_vs_conceder': seen.loc[m, 'share'],
                        **{f'{g}_gap{k}': gaps[g][c] for g in gaps for k, c in (('', 'diff'), ('_lo', 'lo'),
                                                                                  ('_hi', 'hi'))},
                        'scenarios': int(gaps['seen']['scenarios']) if gaps else None, 'world': s['world']})
    return out

def merged(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    "`old`'s rows of runs not in `new`, then `new`'s; only when both hold the same SFT model's rows (same games)."
    a, b = (d[d.run == 'sft'].reset_index(drop=True) for d in (old, new))
    if not a.equals(b): raise SystemExit('--add: the SFT rows differ from greedy.csv\'s: not the same model or games')
    return pd.concat([old[~old.run.isin(set(new.run) - {'sft'})], new[new.run != 'sft']], ignore_index=True)

def main(*eval_dirs: str):
    add = eval_dirs[:1] == ('--add',)
    df = pd.DataFrame([r for d in eval_dirs[add:] for r in greedy_rows(d)]).drop_duplicates(['run', 'role'])
    first = ['run', 'role', 'games', 'valid', 'invalid_per_game', 'first_in_band', 'ir_of_deals', 'deal_rate',
             'share_vs_conceder']
    df = df[first + [c for c in df.columns if c not in first]].round(4)
    out = Path(__file__).resolve().parents[1] / 'data' / 'sweeps' / 'grpo' / 'greedy.csv'
    if add:   # the new rows as the file reads them back, so that SFT's compare value for value with the file's
        df = merged(pd.read_csv(out), pd.read_csv(io.StringIO(df.to_csv(index=False))))
    df.to_csv(out, index=False)
    print(out, len(df), 'rows')

if __name__ == '__main__':
    main(*sys.argv[1:])
