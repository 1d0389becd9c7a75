"""What each tournament design costs and buys: the ladder at the same number of games under four designs.

    python tools/design_widths.py [SEED]

Plays the ladder (8 agents, 120 games a pair, 7,680 games) as `alternate`, `both`, `alternate+antithetic` and
`both+antithetic` (seconds each) and writes, for each, the median 95 % interval width of the leaderboard's shares (role
rows and `both` rows), of the per-agent and pooled first-mover gaps, of the boulware-linear paired gap and of the tier
spread's upper end, with the sample's tilt, to data/sweeps/designs/widths-seedSEED.json. Intervals are over scenario
seeds; a mirror image has its own seed, so an antithetic pair counts as two scenarios (conservative for that design)."""
import json, sys, tempfile, time
from pathlib import Path
from bilateral.tournament import TournamentSpec, run_tournament
from bilateral.strategies import LADDER
from bilateral.store import Store
from bilateral.metrics import leaderboard
from bilateral.findings import first_mover_gap, tier_finding, design_tilt, paired_gap

DESIGNS = {'alternate': dict(first_mover='alternate'), 'both': dict(first_mover='both'),
           'alternate+antithetic': dict(first_mover='alternate', antithetic=True),
           'both+antithetic': dict(first_mover='both', antithetic=True)}

def widths(rows, n_boot: int = 1000) -> dict:
    "The interval widths of one run's rows."
    lb = leaderboard(rows, n_boot)
    w = lb['share_hi'] - lb['share_lo']
    fm = first_mover_gap(rows, n_boot).set_index(['agent', 'role'])
    both = fm[fm.index.get_level_values(1) == 'both'].drop(index=('all', 'both'))
    prop = tier_finding(rows, n_boot, 0, n_boot=n_boot).query('proportional')
    g = paired_gap(rows, 'boulware', 'linear', 'share', n_boot)
    return {'games': len(rows), 'scenario_seeds': int(rows['seed'].nunique()),
            'share_ci_roles': round(float(w[lb['role'] != 'both'].median()), 4),
            'share_ci_both': round(float(w[lb['role'] == 'both'].median()), 4),
            'first_mover_ci_agents': round(float((both['hi'] - both['lo']).median()), 4),
            'first_mover_ci_pooled': round(float(fm.loc[('all', 'both'), 'hi'] - fm.loc[('all', 'both'), 'lo']), 4),
            'paired_gap_ci': round(g['hi'] - g['lo'], 4),
            'tier_spread_hi': round(float(prop['spread_hi'].median()), 4),
            'flat': f"{int(prop['flat'].sum())} of {len(prop)}", 'tilt': round(design_tilt(rows, n_boot)['tilt'], 4)}

def main(seed: int = 0):
    out = {}
    for name, kw in DESIGNS.items():
        with tempfile.TemporaryDirectory() as d:
            t = time.time()
            run_tournament(TournamentSpec(tuple(LADDER), 120, seed=seed, **kw), d, progress=False)
            with Store(d, create=False) as st: rows = st.rows()
            out[name] = {'play_s': round(time.time() - t, 1), **widths(rows)}
        print(name, out[name], flush=True)
    path = Path(__file__).resolve().parents[1] / 'data' / 'sweeps' / 'designs' / f'widths-seed{seed}.json'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + '\n')
    print(path)

if __name__ == '__main__':
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
