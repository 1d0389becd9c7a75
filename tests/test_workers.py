"""Tournaments in worker processes, through the real `bilateral` command: the same store as one process, and the same
safety (kill -9 of the parent, Ctrl-C, a worker that crashes, a fatal failure).

The agent `test-held` (tests/worker_agents.py) is declared as a `bilateral.agents` entry point of a small distribution
written to a temporary folder on PYTHONPATH, so the worker processes know it as the command's own process does."""
import os, shutil, signal, sqlite3, subprocess, sys, time
from pathlib import Path
import pytest
from conftest import child, stored

EXE = str(Path(sys.executable).parent / 'bilateral')
LADDER = 'boulware,linear,conceder,tit-for-tat,accommodating,hardliner,split,haggler'
HELD = ['tournament', '--agents', 'test-held,boulware,linear,conceder,tit-for-tat', '--games-per-pair', '40',
        '--seed', '5', '--preset', 'mixed', '--quiet']
N = 25 * 40
TEST_VARS = ('BILATERAL_TEST_HOLD_AFTER', 'BILATERAL_TEST_CRASH_FILE', 'BILATERAL_TEST_CRASH_AFTER',
             'BILATERAL_TEST_FATAL_AFTER')

@pytest.fixture(scope='module')
def plugin_env(tmp_path_factory):
    "The environment of a command that knows `test-held` through an entry point, in every process it starts."
    d = tmp_path_factory.mktemp('plugin')
    shutil.copy(Path(__file__).parent / 'worker_agents.py', d)
    info = d / 'bilateral_test_agents-0.1.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: bilateral-test-agents\nVersion: 0.1\n')
    (info / 'entry_points.txt').write_text('[bilateral.agents]\ntest = worker_agents\n')
    env = {k: v for k, v in os.environ.items() if k not in TEST_VARS}
    env['PYTHONPATH'] = os.pathsep.join(x for x in (str(d), os.environ.get('PYTHONPATH')) if x)
    return env

def run(args, out, env, **extra):
    return subprocess.run([EXE, *args, '--out', str(out)], capture_output=True, text=True, timeout=300,
                          env={**env, **extra})

def start(args, out, env, **extra):
    "The command as a child to signal (default SIGINT handling; killed if the test fails)."
    return child([EXE, *args, '--out', str(out)], env={**env, **extra})

def contents(out) -> dict:
    "Every stored table, row by row in key order; of games every column but `finished_at` (a wall-clock time)."
    con = sqlite3.connect(Path(out) / 'games.sqlite')
    cols = [r[1] for r in con.execute('PRAGMA table_info(games)') if r[1] != 'finished_at']
    try:
        return {'games': con.execute(f'SELECT {", ".join(cols)} FROM games ORDER BY game_id').fetchall(),
                'meta': con.execute('SELECT * FROM meta ORDER BY key').fetchall(),
                'failures': con.execute('SELECT game_id FROM failures ORDER BY game_id').fetchall()}
    finally: con.close()

def wait_for(out, n, proc, limit=120) -> list:
    t0, seen = time.time(), []
    while time.time() - t0 < limit:
        seen.append(stored(out))
        if seen[-1] >= n or proc.poll() is not None: return seen
        time.sleep(0.02)
    raise AssertionError(f'timed out with {seen[-1:]} games stored')

def wait_stalled(out, n, proc, quiet=1.0) -> list:
    "Wait for `n` games stored, then until no game has been stored for `quiet` seconds: every worker is held."
    seen = wait_for(out, n, proc)
    t0 = time.time()
    while time.time() - t0 < quiet:
        time.sleep(0.05)
        if stored(out) != seen[-1]: seen, t0 = [*seen, stored(out)], time.time()
    return seen

def children(pid) -> list[int]:
    return [int(x) for f in Path(f'/proc/{pid}/task').glob('*/children') for x in f.read_text().split()]

def alive(pid) -> bool:
    "Running, not gone and not a zombie waiting to be reaped."
    try: return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, ProcessLookupError, IndexError): return False

def assert_gone(pids, limit=60):
    t0 = time.time()
    while any(alive(p) for p in pids):
        assert time.time() - t0 < limit, f'worker processes still running: {[p for p in pids if alive(p)]}'
        time.sleep(0.05)

@pytest.fixture(scope='module')
def reference(plugin_env, tmp_path_factory):
    "The `test-held` tournament played by one process, uninterrupted."
    out = tmp_path_factory.mktemp('ref')
    r = run([*HELD, '--workers', '1'], out, plugin_env)
    assert r.returncode == 0, r.stderr
    assert 'worker processes' not in r.stdout
    return contents(out)

def test_two_workers_store_what_one_process_stores(tmp_path):
    args = ['tournament', '--agents', LADDER, '--games-per-pair', '20', '--seed', '3', '--quiet']
    one, two = run([*args, '--workers', '1'], tmp_path / 'one', os.environ), run([*args, '--workers', '2'],
                                                                                 tmp_path / 'two', os.environ)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert '1280/1280 games stored' in two.stdout and '2 worker processes' in two.stdout
    a, b = contents(tmp_path / 'one'), contents(tmp_path / 'two')
    assert len(a['games']) == 1280 and a == b
    assert one.stdout.split('\n', 1)[1] == two.stdout.split('\n', 1)[1]       # the same leaderboard

def test_kill_9_of_the_parent_then_resume(tmp_path, plugin_env, reference):
    out = tmp_path / 'run'
    with start([*HELD, '--workers', '2'], out, plugin_env, BILATERAL_TEST_HOLD_AFTER='30') as proc:
        seen = wait_stalled(out, 100, proc)   # every game in flight is held: no worker writes again, no race
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        kids = children(proc.pid)
        assert len(kids) == 2 and all(alive(k) for k in kids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert_gone(kids)                         # only their stdin closing tells them: they never write again
    killed_at = stored(out)
    assert 100 <= killed_at < N and seen == sorted(seen)
    r = run([*HELD, '--workers', '2'], out, plugin_env)
    assert r.returncode == 0, r.stderr
    assert f'{N}/{N} games stored' in r.stdout and f'({N - killed_at} played now' in r.stdout
    assert contents(out) == reference

def test_ctrl_c_stops_the_workers_and_keeps_finished_games(tmp_path, plugin_env, reference):
    out = tmp_path / 'run'
    with start([*HELD, '--workers', '2'], out, plugin_env, BILATERAL_TEST_HOLD_AFTER='100') as proc:
        wait_for(out, 150, proc)
        kids = children(proc.pid)
        assert proc.poll() is None and len(kids) == 2
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    n = stored(out)
    assert proc.returncode == 2 and 'Traceback' not in err, err
    assert f'interrupted: {n} finished games are stored' in err and 150 <= n < N
    assert_gone(kids)
    r = run([*HELD, '--workers', '2'], out, plugin_env)
    assert r.returncode == 0 and contents(out) == reference, r.stderr

def test_a_worker_that_crashes_is_reported_and_its_games_replayed(tmp_path, plugin_env, reference):
    out = tmp_path / 'run'
    r = run([*HELD, '--workers', '2'], out, plugin_env, BILATERAL_TEST_CRASH_FILE=str(tmp_path / 'crashed'),
            BILATERAL_TEST_CRASH_AFTER='50')
    errs = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(errs) == 1 and 'Traceback' not in r.stderr, r.stderr
    n = stored(out)
    assert errs[0].startswith('bilateral: error: a worker process died (exit code 70)'), errs
    assert f'{n}/{N} games stored: run the same command again' in errs[0]
    assert N // 2 < n < N                                          # the other worker finished its share
    again = run([*HELD, '--workers', '2'], out, plugin_env)
    assert again.returncode == 0 and f'({N - n} played now' in again.stdout, again.stderr
    assert contents(out) == reference

def test_a_fatal_failure_in_a_worker_stops_the_run(tmp_path, plugin_env, reference):
    out = tmp_path / 'run'
    with start([*HELD, '--workers', '2'], out, plugin_env, BILATERAL_TEST_FATAL_AFTER='30') as proc:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and 'stopped: the key was refused (test)' in err and 'Traceback' not in err, err
    assert stored(out) < N
    again = run([*HELD, '--workers', '2'], out, plugin_env)
    assert again.returncode == 0 and contents(out) == reference, again.stderr
