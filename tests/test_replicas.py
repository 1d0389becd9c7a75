"""One model served by two replicas: two of the project's fault-injecting endpoints on 127.0.0.1 behind one agent spec
`openai:MODEL@URL1|URL2`. A tournament (a real `bilateral tournament` process, several games at once) spreads its
requests over both; one replica is killed mid-run, after it served some requests: the games whose request it was given
end unplayed (recorded with their cause, never scored, neither losses nor no-deals), the others go on on the replica
that is up; the same command run again skips the dead replica and plays the unplayed games, and the store ends with
every game once."""
import json, sqlite3, subprocess, sys, time, zlib
from collections import Counter
from pathlib import Path
import pytest
from bilateral.fakeserver import serve
from bilateral.llm import replica_requests
from bilateral.store import Store
from conftest import child

EXE = str(Path(sys.executable).parent / 'bilateral')
GAMES = 24                     # 2 agents, self-play included: 4 ordered pairs x 6 games; 18 of them with the model
SCORED = {'deal', 'quit', 'deadline', 'both_idle', 'event_cap', 'invalid_calls', 'agent_limit', 'context_overflow',
          'content_filter'}

pytestmark = pytest.mark.usefixtures('llm_cache')

def command(out, spec):
    return [EXE, 'tournament', '--agents', f'{spec},linear', '--games-per-pair', '6', '--concurrency', '6',
            '--workers', '1', '--out', str(out), '--quiet']

def query(out, sql):
    con = sqlite3.connect(Path(out) / 'games.sqlite')
    try: return con.execute(sql).fetchall()
    finally: con.close()

def kill_when_served(victim, n, proc, other, limit=120.0) -> tuple:
    """Kill the endpoint `victim` once it has received `n` requests, while `proc` (the tournament) still runs; return
    the requests that `other` and `victim` had received then."""
    t0 = time.time()
    while victim.stats().get('requests', 0) < n:
        assert proc.poll() is None, 'the run ended before the replica was killed: ' + proc.communicate()[1]
        assert time.time() - t0 < limit, 'the replica never received its requests'
        time.sleep(0.02)
    seen = other.stats().get('requests', 0), victim.stats()['requests']
    victim.proc.kill()
    victim.proc.wait()
    return seen

def served(out, table) -> Counter:
    "Requests each replica served in the games of `table` (games, or failures: the unplayed ones), from their records."
    total = Counter()
    for (blob,) in query(out, f'SELECT transcript FROM {table}'):
        for info in json.loads(zlib.decompress(blob)).get('agent_info', {}).values():
            total.update(info.get('replicas', {}))
    return total

def test_replicas_spread_a_dead_one_leaves_games_unplayed_and_the_next_run_plays_them(tmp_path):
    out = tmp_path / 'run'
    with serve() as a, serve() as b:
        spec = f'openai:ok-200ms@{a.url}|{b.url}?cache=off&retries=1'
        with child(command(out, spec)) as proc:
            seen = kill_when_served(b, 16, proc, a)
            stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 3, stdout + stderr                        # done, with games left unplayed
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and 'could not be played (connection ' in lines[0], stderr
        served_a = a.stats()['requests']

        failed = query(out, 'SELECT game_id, buyer, seller, cause, message FROM failures')
        stored = query(out, 'SELECT game_id, end_reason FROM games')
        assert failed and len(failed) + len(stored) == GAMES, (len(failed), len(stored))
        assert {f[3] for f in failed} == {'connection'}                     # the replica's connection, nothing else
        assert all(f[4].startswith(b.url) for f in failed)                  # the message names the dead replica
        assert all(spec in (f[1], f[2]) for f in failed)                    # only games with the model
        assert {r for _, r in stored} <= SCORED                             # no failure stored as a scored game
        assert not {f[0] for f in failed} & {g for g, _ in stored}
        assert min(seen) >= 8, seen                                         # both received requests before the kill
        in_store = served(out, 'games')
        spread = in_store + served(out, 'failures')                         # what the games of the run record
        assert spread[a.url] > 0 and spread[b.url] > 0, spread
        assert replica_requests(out) == {u: in_store[u] for u in (a.url, b.url)}

        r = subprocess.run(command(out, spec), capture_output=True, text=True, timeout=300)   # the same command
        assert r.returncode == 0, r.stdout + r.stderr
        assert f'{GAMES}/{GAMES} games stored' in r.stdout and f'({len(failed)} played now' in r.stdout, r.stdout
        assert a.stats()['requests'] > served_a
    assert query(out, 'SELECT COUNT(*), COUNT(DISTINCT game_id) FROM games') == [(GAMES, GAMES)]
    assert query(out, 'SELECT COUNT(*) FROM failures') == [(0,)]
    assert {r for (r,) in query(out, 'SELECT end_reason FROM games')} <= SCORED
    replayed = {f[0] for f in failed}
    with Store(out, create=False) as st:
        infos = [i for g, t in st.transcripts() if g in replayed for i in t['agent_info'].values() if 'replicas' in i]
    assert infos and all(i['replicas'][b.url] == 0 and i['replicas'][a.url] > 0 for i in infos)   # all on the live one

def test_a_bad_replica_list_is_one_line_and_exit_2(tmp_path):
    spec = 'openai:ok@http://127.0.0.1:9/v1|ftp://127.0.0.1:10/v1'
    r = subprocess.run(command(tmp_path / 'run', spec), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    said = "base URL must start with http:// or https://, got 'ftp://127.0.0.1:10/v1'"
    assert r.stderr.strip() == f'bilateral: error: {said}', r.stderr
    assert not (tmp_path / 'run').exists()
