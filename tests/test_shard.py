"""Tournaments that shard and merge: `bilateral tournament --shard K/N` in four processes, `bilateral merge`, and a run
directory equal to the one a single process writes, down to the report's tables. All through the real console script."""
import json, shutil, sqlite3, subprocess, sys, zlib
from pathlib import Path
import pandas as pd
import pytest

EXE = str(Path(sys.executable).parent / 'bilateral')
SPEC = ['--agents', 'boulware,conceder,linear', '--games-per-pair', '6', '--seed', '3', '--quiet']
N_GAMES = 3 * 3 * 6

def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=120)

def one_line(r, *words):
    "An error of the command line: exit 2, one line on stderr that holds `words`, no traceback."
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr, r.stderr
    for w in words: assert w in r.stderr, (w, r.stderr)

def read(d, what='SELECT * FROM games ORDER BY game_id') -> list:
    "Rows of the store in run directory `d`, read with a read-only connection of this process."
    con = sqlite3.connect(f'file:{Path(d) / "games.sqlite"}?mode=ro', uri=True)
    try: return con.execute(what).fetchall()
    finally: con.close()

def games(d) -> dict:
    "game id -> its stored row with the transcript decoded, wall-clock times aside (`finished_at`, agents' timings)."
    out = {}
    for r in read(d):
        t = json.loads(zlib.decompress(r[10]))
        for info in (t.get('agent_info') or {}).values():
            for k in ('latency_s', 'wall_s'): info.pop(k, None)
        out[r[0]] = (*r[1:10], t, r[11])
    return out

def state(d) -> tuple:
    "All a store holds but wall-clock times: games, failures, meta."
    return games(d), read(d, 'SELECT game_id, cause FROM failures ORDER BY game_id'), read(d, 'SELECT * FROM meta')

@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    "The spec played by one process into `whole`, and as four shards at once, each by a process of its own."
    d = tmp_path_factory.mktemp('shards')
    cmds = [[EXE, 'tournament', *SPEC, '--out', str(d / f'shard{k}'), '--shard', f'{k}/4'] for k in range(1, 5)]
    cmds[1] += ['--workers', '2']                     # a shard played by worker processes too
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
    try:
        whole = run('tournament', *SPEC, '--out', d / 'whole')
        shards = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None: p.kill()
    assert whole.returncode == 0, whole.stderr
    assert all(code == 0 for _, _, code in shards), shards
    return d, [out for out, _, _ in shards]

def shard_dirs(d, ks=(1, 2, 3, 4)): return [d / f'shard{k}' for k in ks]

def test_each_shard_plays_its_own_part(runs):
    d, outs = runs
    sizes = []
    for k, out in enumerate(outs, 1):
        n = int(out.split('/')[0])
        assert out.startswith(f'{n}/{n} games of shard {k}/4 stored in {d / f"shard{k}"}'), out
        sizes.append(n)
    assert sum(sizes) == N_GAMES and max(sizes) - min(sizes) <= 4, sizes       # about a quarter each
    ids = [set(games(s)) for s in shard_dirs(d)]
    assert set().union(*ids) == set(games(d / 'whole')) and sum(map(len, ids)) == N_GAMES   # each game in one shard
    pairs = [pd.Series([g[0] + '|' + g[1] for g in games(s).values()]).value_counts() for s in shard_dirs(d)]
    assert all(set(p.values) <= {1, 2} and len(p) == 9 for p in pairs)           # every pairing 6/4 -> 1 or 2 a shard
    again = run('tournament', *SPEC, '--out', d / 'shard3', '--shard', '3/4')   # resuming plays nothing more
    assert again.returncode == 0 and '(0 played now' in again.stdout, again.stdout + again.stderr

def test_merged_shards_equal_the_run_of_one_process(runs):
    d, _ = runs
    r = run('merge', d / 'merged', *shard_dirs(d))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f'{N_GAMES} games copied into {d / "merged"} from 4 directories (0 already there); '
                                f'shards 1, 2, 3, 4 of 4 merged; {N_GAMES}/{N_GAMES} games stored')
    assert games(d / 'merged') == games(d / 'whole')
    outs = {}
    for name in ('merged', 'whole'):
        rep = run('report', d / name, '--n-boot', '100', '--no-figures')
        assert rep.returncode == 0, rep.stderr
        outs[name] = rep.stdout.replace(str(d / name), 'RUN')
    assert outs['merged'] == outs['whole']
    tables = sorted(p.name for p in (d / 'whole' / 'tables').glob('*.csv'))
    assert len(tables) >= 10 and tables == sorted(p.name for p in (d / 'merged' / 'tables').glob('*.csv'))
    for t in tables: assert (d / 'merged' / 'tables' / t).read_bytes() == (d / 'whole' / 'tables' / t).read_bytes(), t
    for f in ('transcripts.jsonl', 'summary.json'):
        assert (d / 'merged' / f).read_text() == (d / 'whole' / f).read_text(), f
    pd.testing.assert_frame_equal(pd.read_parquet(d / 'merged' / 'games.parquet'),
                                  pd.read_parquet(d / 'whole' / 'games.parquet'))
    same = run('tournament', *SPEC, '--out', d / 'merged')        # the merged run is the whole run: nothing to play
    assert same.returncode == 0, same.stderr
    assert f'{N_GAMES}/{N_GAMES} games stored' in same.stdout and '(0 played now' in same.stdout

def test_merging_in_steps_again_and_into_a_partial_run_counts_nothing_twice(runs):
    d, _ = runs
    step = d / 'step'
    first = run('merge', step, *shard_dirs(d, (1, 2)))
    n12 = len(games(d / 'shard1')) + len(games(d / 'shard2'))
    assert first.returncode == 3, first.stderr                  # done, but games are missing: said on stderr
    assert f'{n12}/{N_GAMES} games stored' in first.stdout
    assert f'{N_GAMES - n12} of {N_GAMES} planned games are not in {step}' in first.stderr
    assert 'shards 3, 4 of 4 not merged yet' in first.stderr
    rest = run('merge', step, *shard_dirs(d))
    assert rest.returncode == 0 and f'({n12} already there)' in rest.stdout, rest.stdout + rest.stderr
    again = run('merge', step, *shard_dirs(d))
    assert again.returncode == 0 and again.stdout.startswith(f'0 games copied into {step} from 4 directories '
                                                             f'({N_GAMES} already there)'), again.stdout
    assert games(step) == games(d / 'whole')
    partial = d / 'partial'                                     # a run of one process that stopped half way
    shutil.copytree(d / 'whole', partial)
    con = sqlite3.connect(partial / 'games.sqlite')
    with con: con.execute("DELETE FROM games WHERE rowid % 2 = 0")
    con.close()
    left = len(games(partial))
    r = run('merge', partial, *shard_dirs(d))
    assert r.returncode == 0 and r.stdout.startswith(f'{N_GAMES - left} games copied into {partial} from 4 directories '
                                                     f'({left} already there)'), r.stdout + r.stderr
    assert games(partial) == games(d / 'whole')

@pytest.mark.parametrize('shard', ['0/4', '5/4', 'x', '4', '1/0'])
def test_bad_shard_is_one_line(tmp_path, shard):
    r = run('tournament', *SPEC, '--out', tmp_path / 'new', '--shard', shard)
    one_line(r, 'argument --shard', 'a shard is K/N', repr(shard))
    assert not (tmp_path / 'new').exists()

def test_a_directory_keeps_its_part(runs):
    d, _ = runs
    before = state(d / 'shard2'), state(d / 'whole')
    one_line(run('tournament', *SPEC, '--out', d / 'shard2', '--shard', '3/4'), 'holds shard 2/4', 'not shard 3/4')
    one_line(run('tournament', *SPEC, '--out', d / 'shard2'), 'holds shard 2/4', 'pass --shard 2/4')
    one_line(run('tournament', *SPEC, '--out', d / 'whole', '--shard', '1/4'), 'holds the whole run', 'not shard 1/4')
    assert (state(d / 'shard2'), state(d / 'whole')) == before

def test_merge_refuses_other_specs_and_doubles_before_writing(runs, tmp_path):
    d, _ = runs
    other = tmp_path / 'other'                                  # shard 4/4 of another seed
    r = run('tournament', *SPEC, '--seed', '4', '--games-per-pair', '1', '--out', other, '--shard', '4/4')
    assert r.returncode in (0, 3), r.stderr
    new = tmp_path / 'new'
    one_line(run('merge', new, *shard_dirs(d, (1, 2, 3)), other), 'holds another tournament', '(differs in: seed)')
    one_line(run('merge', new, d / 'shard1', d / 'shard1'), 'given twice')
    one_line(run('merge', d / 'shard1', d / 'shard2'), 'holds shard 1/4 of a tournament: merge into another directory')
    one_line(run('merge', d / 'shard1', d / 'shard1'), 'the directory merged into')
    one_line(run('merge', new, d / 'shard1', tmp_path / 'nowhere'), 'no results store')
    assert not new.exists()
    before = state(d / 'whole')
    one_line(run('merge', d / 'whole', other), 'holds another tournament')
    assert state(d / 'whole') == before

def test_two_copies_of_a_game_that_differ_are_refused(runs, tmp_path):
    d, _ = runs
    forged = tmp_path / 'forged'                                # a shard whose copy of one game was altered
    shutil.copytree(d / 'shard1', forged)
    con = sqlite3.connect(forged / 'games.sqlite')
    gid, row = con.execute('SELECT game_id, row FROM games ORDER BY game_id LIMIT 1').fetchone()
    with con: con.execute('UPDATE games SET row=? WHERE game_id=?', (row.replace('"deal":', '"deal": 0, "x":'), gid))
    con.close()
    target = tmp_path / 'target'
    shutil.copytree(d / 'whole', target)
    before = state(target)
    one_line(run('merge', target, forged), f'game {gid} differs between', '(in: row)', 'nothing was merged')
    assert state(target) == before
