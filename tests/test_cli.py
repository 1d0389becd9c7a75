"The `bilateral` console script, run as a real subprocess."
import json, os, subprocess, sys
from pathlib import Path
import pytest

EXE = str(Path(sys.executable).parent / 'bilateral')

def run(*args, cwd=None):
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, timeout=120)

def test_agents_lists_the_ladder():
    r = run('agents')
    assert r.returncode == 0
    names = [l.split()[0] for l in r.stdout.splitlines()]
    assert names == ['boulware', 'linear', 'conceder', 'tit-for-tat', 'accommodating', 'hardliner', 'split', 'random', 'openai', 'hf', 'narrated', 'human']

def test_run_json_fields_and_determinism():
    a = run('run', '--buyer', 'boulware', '--seller', 'conceder', '--seed', '4', '--preset', 'mixed', '--json')
    assert a.returncode == 0, a.stderr
    d = json.loads(a.stdout)
    for k in ('deal', 'price', 'buyer_value', 'seller_cost', 'buyer_share', 'seller_share', 'end_reason', 'n_events', 'duration_s'):
        assert k in d
    assert d['buyer'] == 'boulware' and d['preset'] == 'mixed' and d['seed'] == 4
    assert a.stdout == run('run', '--buyer', 'boulware', '--seller', 'conceder', '--seed', '4', '--preset', 'mixed', '--json').stdout

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
    f.write_text('id,title,category,description,listing_price,low_price,high_price\nok,A,c,d,10,8,12\nbad,B,c,d,NaN,8,12\n')
    r = run('run', '--buyer', 'linear', '--seller', 'linear', '--catalogue', str(f))
    assert r.returncode == 2 and "row 3, column 'listing_price'" in r.stderr

def test_user_catalogue_is_used(tmp_path):
    f = tmp_path / 'mine.json'
    f.write_text(json.dumps([{'id': 'boat', 'title': 'Rowing boat', 'category': 'outdoor', 'description': 'Wooden.', 'listing_price': 900, 'low_price': 700, 'high_price': 1000}]))
    r = run('run', '--buyer', 'linear', '--seller', 'linear', '--catalogue', str(f), '--item', 'boat', '--json')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['item_id'] == 'boat'

def test_tournament_prints_a_leaderboard(tmp_path):
    r = run('tournament', '--agents', 'boulware,conceder', '--games-per-pair', '3', '--seed', '1', '--out', str(tmp_path), '--quiet')
    assert r.returncode == 0, r.stderr
    assert '12/12 games stored' in r.stdout and 'share [95% CI]' in r.stdout
    assert sum(l.startswith(('buyer', 'seller')) for l in r.stdout.splitlines()) == 4

def test_bench_reports_rates():
    r = run('bench', '--games', '50')
    assert r.returncode == 0, r.stderr
    assert 'games/s' in r.stdout and 'events/s' in r.stdout and 'overhead ratio' in r.stdout
