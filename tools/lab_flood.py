"""One participant floods a lab server (issue 56, item 2); how the others fare. Run it under `nice -n 19`:

    nice -n 19 python tools/lab_flood.py --tries 1000 --big 10 --empty 1000

A `bilateral lab run` on 127.0.0.1 with one flooder (P01) and `--victims` participants who play games against a
scripted agent all along (tests/lab_bot.py's moves), or with `--human` each other in pairs; when the flood is over they
finish the game they are in and leave. P01 agrees, then sends `--tries` wrong quiz answers at `--rate`
a second, `--big` submissions of three answers of `--big-kb` KB each, and `--empty` frames `{}`, reconnecting whenever
the server closes its socket; the session asks the belief question (`--belief-prize`, 2 by default; 0 asks none), which
the victims answer after each game. Printed: the victims' action-to-answer latency and a page load's latency during
the flood (p50, p99, max), how long the flood took to send, how much lab.sqlite (with its WAL) grew during it, its size
at the end (checkpointed), the size of the flooder's row of tries, and the belief questions asked and answered."""
import argparse, asyncio, json, signal, sqlite3, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path
import websockets
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'tests'))
from lab_bot import belief, move
from bilateral.fakeserver import free_port
from bilateral.lab import QUIZ

def size(d: Path) -> int: return sum(p.stat().st_size for p in d.glob('lab.sqlite*'))

def q(xs: list, p: float) -> float:
    xs = sorted(xs)
    return round(1000 * xs[min(len(xs) - 1, int(p * len(xs)))]) if xs else float('nan')

async def victim(link: str, lag: list, stop: asyncio.Event):
    "Play games on and on; `lag` gets (when sent, seconds to the server's next frame) for each action."
    async with websockets.connect(link.replace('http://', 'ws://').replace('/p/', '/ws/'), max_size=2**22) as ws:
        sent = None
        while True:
            st = json.loads(await ws.recv())
            if stop.is_set() and (st.get('stage') != 'game' or st['over']): return      # leave between games
            if sent: lag.append((sent, time.monotonic() - sent))
            sent, msg = None, None
            if st.get('stage') == 'consent': msg = {'type': 'consent', 'agree': True}
            elif st.get('stage') == 'instructions': msg = {'type': 'quiz', 'answers': [x[2] for x in QUIZ]}
            elif st.get('stage') in ('game', 'belief') and (st.get('belief') or {}).get('answered') is False:
                msg = belief(st)
            elif st.get('stage') == 'belief' or (st.get('stage') == 'game' and st['over']): msg = {'type': 'next'}
            elif st.get('stage') == 'game' and st['your_turn']: msg = move(st)
            if msg:
                sent = time.monotonic()
                await ws.send(json.dumps(msg))

async def pages(link: str, lag: list, stop: asyncio.Event):
    "Load a participant's page every half second; `lag` gets (when, seconds to load it)."
    while not stop.is_set():
        t = time.monotonic()
        await asyncio.to_thread(lambda: urllib.request.urlopen(link, timeout=120).read())
        lag.append((t, time.monotonic() - t))
        await asyncio.sleep(0.5)

async def flood(link: str, a) -> dict:
    "P01's frames, resent over a new socket whenever the server closes one; what came back, by kind."
    url, got, ws = link.replace('http://', 'ws://').replace('/p/', '/ws/'), {}, None
    async def drain(ws):
        try:
            async for m in ws:
                k = json.loads(m).get('error') or json.loads(m).get('stage')
                got[k] = got.get(k, 0) + 1
        except websockets.ConnectionClosed as e:
            k = f'closed {e.rcvd and e.rcvd.code}'
            got[k] = got.get(k, 0) + 1
    async def send(text):
        nonlocal ws
        for _ in range(3):
            try:
                if ws is None:
                    ws = await websockets.connect(url, max_size=2**24, max_queue=None)
                    asyncio.ensure_future(drain(ws))
                return await ws.send(text)
            except websockets.ConnectionClosed: ws = None
    await send(json.dumps({'type': 'consent', 'agree': True}))
    for i in range(a.tries):
        await send(json.dumps({'type': 'quiz', 'answers': ['no', '$80', None]}))
        await asyncio.sleep(1 / a.rate)
    for i in range(a.big): await send(json.dumps({'type': 'quiz', 'answers': [f'{i}' + 'x' * a.big_kb * 1000] * 3}))
    for i in range(a.empty): await send('{}')
    await asyncio.sleep(1)
    if ws: await ws.close()
    return got

async def main(a):
    d = Path(tempfile.mkdtemp(prefix='lab-flood-')) / 'session'
    port = free_port()
    pairs = ['--treatment', f'{a.victims + 1}:random:human', '--match-wait', '10']      # P01 among them, never matched
    alone = ['--treatment', '1:buyer:conceder', '--treatment', f'{a.victims}:buyer:conceder']
    cmd = [str(Path(sys.executable).parent / 'bilateral'), 'lab', 'run', str(d), '--port', str(port),
           *(pairs if a.human else alone), '--games', '99', '--deadline', '20', '--belief-prize', str(a.belief_prize)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline().strip() for _ in range(a.victims + 2)]
        people = dict(x.split(': ', 1) for x in lines if x.startswith('P'))
        await asyncio.sleep(2)
        stop, acts, loads = asyncio.Event(), [], []
        others = [asyncio.ensure_future(victim(x, acts, stop)) for c, x in people.items() if c != 'P01']
        others.append(asyncio.ensure_future(pages(people['P02'], loads, stop)))
        await asyncio.sleep(5)
        before, t0 = size(d), time.monotonic()
        got = await flood(people['P01'], a)
        t1 = time.monotonic()
        await asyncio.sleep(3)
        stop.set()
        await asyncio.wait(others, timeout=150)
        during = lambda xs: [x for t, x in xs if t0 <= t <= t1]
        grew = round((size(d) - before) / 1024)
    finally:
        proc.send_signal(signal.SIGINT)
        try: proc.wait(60)
        except subprocess.TimeoutExpired: proc.kill()
    con = sqlite3.connect(d / 'lab.sqlite')
    row = con.execute("SELECT length(answers) FROM participants WHERE code='P01'").fetchone()[0]
    beliefs = con.execute('SELECT COUNT(*), COUNT(estimate) FROM beliefs').fetchone()
    games = dict(con.execute("SELECT status || ' ' || COALESCE(reason, ''), COUNT(*) FROM lab_games GROUP BY 1"))
    opponents = dict(con.execute("SELECT CASE WHEN buyer LIKE 'human:%' AND seller LIKE 'human:%' "
                                 "THEN 'two participants' ELSE 'an agent' END, COUNT(*) FROM lab_games GROUP BY 1"))
    con.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    con.close()
    return {'flood_s': round(t1 - t0, 1), 'victim_actions': len(during(acts)),
            'action_ms_p50_p99_max': [q(during(acts), 0.5), q(during(acts), 0.99), q(during(acts), 1)],
            'page_loads': len(during(loads)),
            'page_ms_p50_p99_max': [q(during(loads), 0.5), q(during(loads), 0.99), q(during(loads), 1)],
            'lab_sqlite_growth_kb': grew, 'lab_sqlite_kb_at_end': round(size(d) / 1024),
            'flooder_row_bytes': row, 'flooder_got': got, 'beliefs_asked_answered': list(beliefs),
            'games_by_status_and_reason': games, 'games_between': opponents}

if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--tries', type=int, default=3000)
    p.add_argument('--rate', type=float, default=50)
    p.add_argument('--big', type=int, default=20)
    p.add_argument('--big-kb', type=int, default=300)
    p.add_argument('--empty', type=int, default=5000)
    p.add_argument('--victims', type=int, default=4)
    p.add_argument('--human', action='store_true', help='all in one treatment N:random:human: the victims play in '
                   'pairs (matched by arrival; one who waits over --match-wait 10 s plays the fallback agent)')
    p.add_argument('--belief-prize', type=float, default=2.0, help="the belief question's prize (0: not asked)")
    print(json.dumps(asyncio.run(main(p.parse_args()))))
