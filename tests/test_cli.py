"The `bilateral` console script, run as a real subprocess."
import json, subprocess, sys
from pathlib import Path
import pytest

EXE = str(Path(sys.executable).parent / 'bilateral')

def run(*args, cwd=None):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=600)   # a liveness bound

def test_agents_lists_the_ladder():
    r = run('agents')
    assert r.returncode == 0
    names = [l.split()[0] for l in r.stdout.splitlines() if not l.startswith(' ')]
    assert names == ['boulware', 'linear', 'conceder', 'tit-for-tat', 'accommodating', 'hardliner', 'split', 'haggler',
                     'hf', 'human', 'narrated', 'openai', 'random']
    assert '               spec: random[:RATE], RATE in [0, 1]' in r.stdout.splitlines()
    assert 'timeout=[0.1,3600]' in r.stdout and 'retries=[0,20]' in r.stdout     # each option with its range

def test_run_json_fields_and_determinism():
    args = ('run', '--buyer', 'boulware', '--seller', 'conceder', '--seed', '4', '--preset', 'mixed', '--json')
    a = run(*args)
    assert a.returncode == 0, a.stderr
    d = json.loads(a.stdout)
    for k in ('deal', 'price', 'buyer_value', 'seller_cost', 'buyer_share', 'seller_share', 'end_reason', 'n_events',
              'duration_s'):
        assert k in d
    assert d['buyer'] == 'boulware' and d['preset'] == 'mixed' and d['seed'] == 4
    assert a.stdout == run(*args).stdout

def test_run_readable_with_item():
    r = run('run', '--buyer', 'hardliner', '--seller', 'linear', '--item', 'french-press-1l', '--seed', '2')
    assert r.returncode == 0, r.stderr
    assert 'French press' in r.stdout or 'french press' in r.stdout.lower()
    assert '->' in r.stdout.splitlines()[-1]

@pytest.mark.parametrize('args', [
    ('run', '--buyer', 'nobody', '--seller', 'linear'),
    ('run', '--buyer', 'linear'),
    ('run', '--buyer', 'linear', '--seller', 'linear', '--seed', 'abc'),
    ('run', '--buyer', 'linear', '--seller', 'linear', '--preset', 'generous'),
    ('run', '--buyer', 'linear', '--seller', 'linear', '--item', 'unicorn'),
    ('run', '--buyer', 'linear', '--seller', 'linear', '--deadline', '0'),
    ('run', '--buyer', 'linear', '--seller', 'linear', '--catalogue', '/no/such/file.csv'),
    ('run', '--buyer', 'random:lots', '--seller', 'linear'),
    ('tournament', '--agents', 'linear,ghost', '--games-per-pair', '1', '--out', '/tmp/bilateral-never-created'),
    ('tournament', '--agents', 'linear', '--out', '/tmp/x', '--concurrency', '0'),
    ('reproduce', '--profile', 'huge'),
    ('teleport',), (),
])
def test_bad_arguments_one_line_no_traceback(args):
    r = run(*args)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr, r.stderr
    assert r.stderr.startswith('bilateral: error:')

def test_bad_catalogue_names_row_and_column(tmp_path):
    f = tmp_path / 'items.csv'
    f.write_text('id,title,category,description,listing_price,low_price,high_price\n'
                 'ok,A,c,d,10,8,12\nbad,B,c,d,NaN,8,12\n')
    r = run('run', '--buyer', 'linear', '--seller', 'linear', '--catalogue', str(f))
    assert r.returncode == 2 and "row 3, column 'listing_price'" in r.stderr

def test_user_catalogue_is_used(tmp_path):
    f = tmp_path / 'mine.json'
    f.write_text(json.dumps([{'id': 'boat', 'title': 'Rowing boat', 'category': 'outdoor', 'description': 'Wooden.',
                              'listing_price': 900, 'low_price': 700, 'high_price': 1000}]))
    r = run('run', '--buyer', 'linear', '--seller', 'linear', '--catalogue', str(f), '--item', 'boat', '--json')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['item_id'] == 'boat'

def test_tournament_prints_a_leaderboard(tmp_path):
    r = run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '3', '--seed', '1',
            '--out', str(tmp_path), '--quiet')
    assert r.returncode == 0, r.stderr
    assert '12/12 games stored' in r.stdout and 'share [95% CI]' in r.stdout
    assert sum(l.startswith(('buyer', 'seller')) for l in r.stdout.splitlines()) == 4

def test_bench_reports_rates():
    r = run('bench', '--games', '50')
    assert r.returncode == 0, r.stderr
    assert 'games/s' in r.stdout and 'events/s' in r.stdout and 'overhead ratio' in r.stdout

def snapshot(d: Path) -> dict:
    "Every file below `d` with its bytes: to show that a refused command changed nothing."
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(Path(d).rglob('*')) if p.is_file()}

@pytest.fixture
def stored_run(tmp_path):
    d = tmp_path / 'run'
    r = run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '2', '--out', str(d), '--quiet')
    assert r.returncode == 0, r.stderr
    return d

def one_line(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-500:])
    errs = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(errs) == 1 and errs[0].startswith('bilateral: error:') and 'Traceback' not in r.stderr, r.stderr
    for w in words: assert w in errs[0], errs[0]

def test_out_that_is_a_file_or_under_a_file(tmp_path):
    f = tmp_path / 'file.txt'
    f.write_text('keep me')
    one_line(run('tournament', '--agents', 'linear', '--out', str(f)), 'is a file, not a run directory')
    one_line(run('tournament', '--agents', 'linear', '--out', str(f / 'sub')), 'cannot create the run directory')
    one_line(run('report', str(f)), 'not a directory')
    assert f.read_text() == 'keep me'

@pytest.mark.parametrize('content,words', [
    (b'not a database at all, just some bytes' * 100, ['not a readable bilateral results store']),
    ('foreign', ['not a bilateral results store', 'other tables']),
    ('other-games', ['not a bilateral results store', 'games table has other columns']),
])
def test_foreign_or_corrupt_store_is_refused_before_any_game(tmp_path, content, words):
    d = tmp_path / 'run'
    d.mkdir()
    db = d / 'games.sqlite'
    if isinstance(content, bytes): db.write_bytes(content)
    else:
        import sqlite3
        con = sqlite3.connect(db)
        foreign = 'CREATE TABLE customers (id INTEGER, name TEXT)'
        con.execute(foreign if content == 'foreign' else 'CREATE TABLE games (id INTEGER)')
        con.commit()
        con.close()
    before = snapshot(d)
    one_line(run('tournament', '--agents', 'linear', '--games-per-pair', '1', '--out', str(d), '--quiet'), *words)
    one_line(run('report', str(d)), *words)
    assert snapshot(d) == before

@pytest.mark.parametrize('args,words', [
    (['--agents', 'boulware,conceder,linear'], ['another spec', 'agents', '--extend']),
    (['--agents', 'boulware,conceder', '--games-per-pair', '3'], ['another spec', 'games_per_pair', '--extend']),
    (['--agents', 'boulware,conceder', '--no-self-play'], ['another spec', 'self_play', 'new --out']),
    (['--agents', 'boulware'], ['another spec', 'agents', 'new --out']),
    (['--agents', 'boulware,conceder', '--seed', '9'], ['another tournament', 'seed']),
])
def test_another_spec_is_refused_naming_the_difference(stored_run, args, words):
    before = snapshot(stored_run)
    extra = [] if '--games-per-pair' in args else ['--games-per-pair', '2']
    one_line(run('tournament', *args, *extra, '--out', str(stored_run), '--quiet'), *words)
    assert snapshot(stored_run) == before

def test_extend_adds_agents_and_games_on_purpose(stored_run):
    r = run('tournament', '--agents', 'boulware,conceder,linear', '--games-per-pair', '3', '--out', str(stored_run),
            '--quiet', '--extend')
    assert r.returncode == 0, r.stderr
    assert '27/27 games stored' in r.stdout and '(19 played now' in r.stdout   # the 8 games already there were kept

NEW = ['tournament', '--agents', 'boulware', '--out', '{new}']   # a tournament into a new folder

@pytest.mark.parametrize('args,words', [
    (['report', '{run}', '--n-boot', '0'], ['argument --n-boot', 'in [10, inf)', "got '0'"]),
    (['report', '{run}', '--n-boot', '-5'], ['argument --n-boot', 'in [10, inf)', "got '-5'"]),
    ([*NEW, '--agent-limit', 'boulware'], ['--agent-limit takes AGENT=K']),
    ([*NEW, '--agent-limit', 'boulware=0'], ['K >= 1']),
    ([*NEW, '--agent-limit', 'linear=2'], ['not in this tournament']),
    ([*NEW, '--games-per-pair', '1000000000'], ['the limit is 100,000']),
    (['tournament', '--agents', 'boulware,conceder,linear,split,hardliner,tit-for-tat,accommodating', '--out', '{new}',
      '--games-per-pair', '100000'], ['the limit is 2,000,000']),
    ([*NEW, '--concurrency', '100000'], ['concurrency must be 1 to 4096']),
])
def test_absurd_sizes_and_bad_options_get_one_line(stored_run, tmp_path, args, words):
    before = snapshot(stored_run)
    t0 = __import__('time').time()
    one_line(run(*[a.format(run=stored_run, new=tmp_path / 'new') for a in args]), *words)
    assert __import__('time').time() - t0 < 30 and not (tmp_path / 'new').exists()
    assert snapshot(stored_run) == before

def test_old_stores_give_their_unplayable_games_back(stored_run):
    "A store written before failures were kept apart: its agent_error rows are played again, not scored."
    import sqlite3
    con = sqlite3.connect(stored_run / 'games.sqlite')
    gid = con.execute("SELECT game_id FROM games ORDER BY game_id LIMIT 1").fetchone()[0]
    con.execute("UPDATE games SET end_reason='agent_error' WHERE game_id=?", (gid,))
    con.commit()
    con.close()
    r = run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '2', '--out', str(stored_run), '--quiet')
    assert r.returncode == 0 and '8/8 games stored' in r.stdout and '(1 played now' in r.stdout, r.stdout + r.stderr

@pytest.fixture
def read_only_dir(tmp_path):
    """A folder on a tmpfs remounted read-only (root ignores file modes, not a read-only mount); skipped where mount is
    not allowed."""
    d = tmp_path / 'ro'
    d.mkdir()
    if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', str(d)], capture_output=True).returncode:
        pytest.skip('cannot mount a tmpfs here to make a read-only folder')
    try: yield d
    finally: subprocess.run(['umount', '-l', str(d)], capture_output=True)

def test_read_only_run_dir_or_parent_gets_one_line(read_only_dir):
    r = run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '2', '--out', str(read_only_dir / 'run'),
            '--quiet')
    assert r.returncode == 0, r.stderr
    subprocess.run(['mount', '-o', 'remount,ro', str(read_only_dir)], check=True)
    before = snapshot(read_only_dir)
    one_line(run('tournament', '--agents', 'linear', '--out', str(read_only_dir / 'new')),
             'cannot create the run directory', 'Read-only file system')
    run_dir = str(read_only_dir / 'run')
    for args in (['tournament', '--agents', 'boulware,conceder', '--games-per-pair', '2', '--out', run_dir],
                 ['report', run_dir], ['view', run_dir]):
        one_line(run(*args), 'the run directory must be writable')
    assert snapshot(read_only_dir) == before


def test_tournament_deadline_is_played_and_part_of_the_spec(tmp_path):
    "`--deadline 60`: every stored game kept to it; the same run directory refuses the default deadline in one line."
    from bilateral.store import Store
    assert run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '2', '--deadline', '60',
               '--out', str(tmp_path), '--quiet').returncode == 0
    with Store(tmp_path, create=False) as st:
        ts = [t for _, t in st.transcripts()]
    assert len(ts) == 8 and all(t['rules']['deadline'] == 60 and t['outcome']['t'] <= 60 for t in ts)
    one_line(run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '2', '--out', str(tmp_path),
                 '--quiet'), 'another tournament', 'rules')


def test_evaluate_takes_the_world_preset_and_deadline(tmp_path):
    "`bilateral evaluate --preset dollars --deadline 60` plays and names that world; a bad deadline: one line, exit 2."
    r = run('evaluate', '--model', 'm=boulware', '--seen', 'conceder', '--unseen', 'linear', '--preset', 'dollars',
            '--deadline', '60', '--games-per-pair', '2', '--n-boot', '10', '--out', str(tmp_path / 'ev'), '--quiet')
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith('# Evaluation, dollars-60s world')
    s = json.loads((tmp_path / 'ev' / 'summary.json').read_text())
    assert (s['preset'], s['deadline'], s['world'], s['games']) == ('dollars', 60, 'dollars-60s', 8)
    one_line(run('evaluate', '--model', 'm=boulware', '--seen', 'conceder', '--deadline', '0',
                 '--out', str(tmp_path / 'ev2')), '--deadline')
    assert not (tmp_path / 'ev2').exists()

def test_evaluate_with_probes(tiny_model, tmp_path):
    """`bilateral evaluate --probe request` plays each model and its probed twin on the same scenarios and prints how
    many paired games asking left unchanged; a seat that takes no probes: one line, exit 2, before any game."""
    spec = f'hf:{tiny_model[0]}?window=4&max_turns=6&max_new_tokens=48&threads=1'   # short games
    r = run('evaluate', '--model', f't={spec}', '--seen', 'linear', '--games-per-pair', '2', '--n-boot', '10',
            '--probe', 'request', '--out', str(tmp_path / 'ev'), '--quiet')
    assert r.returncode == 0, r.stderr[-2000:]
    same = json.loads((tmp_path / 'ev' / 'summary.json').read_text())['probe_effect']['same']
    assert [(s['games'], s['same']) for s in same] == [(4, 4)]   # 2 scenarios x 2 roles, each game as it was unasked
    assert '## Does asking change play? (probes by request' in r.stdout
    assert '| t | seen | linear | 4 | 4 | 1.000 |' in r.stdout
    one_line(run('evaluate', '--model', 'm=boulware', '--seen', 'linear', '--probe', 'tool',
                 '--out', str(tmp_path / 'ev3')), 'm=boulware cannot be probed')
    assert not (tmp_path / 'ev3').exists()
