"""The browser lab end to end: `bilateral lab run` in its own process on 127.0.0.1, participants in Debian's Chromium
(Playwright, as tests/test_view.py drives it) and over WebSockets (tests/lab_bot.py); the session's store read back by
`bilateral report` and `bilateral lab export`. Skipped, saying why, where no Chromium is installed."""
import asyncio, csv, json, shutil, signal, subprocess, sys, time, urllib.request
from contextlib import contextmanager
from pathlib import Path
import pytest
from conftest import child, fault_agent
from bilateral.engine import calls as calls_of, replay
from bilateral.fakeserver import free_port
from bilateral.lab import QUIZ
from bilateral.store import Store

EXE = str(Path(sys.executable).parent / 'bilateral')
CHROMIUM = shutil.which('chromium') or ('/usr/bin/chromium' if Path('/usr/bin/chromium').exists() else None)
FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
NOTE = '<script>window.hacked=1</script><b>bold?</b>'

def start(d, port, n, *args):
    "The lab's server in its own process, once it answers; the lines it printed (admin link, `n` participant links)."
    cm = child([EXE, 'lab', 'run', str(d), '--port', str(port), *args])
    proc, lines = cm.__enter__(), []
    while sum(x.startswith('P') for x in lines) < n:
        if not (line := proc.stdout.readline()): raise AssertionError(proc.stderr.read())
        lines.append(line.strip())
    for _ in range(300):
        try: urllib.request.urlopen(f'http://127.0.0.1:{port}/admin', timeout=2)
        except urllib.error.HTTPError as e:
            assert e.code == 403                         # up, and the admin page wants its token
            return cm, proc, lines
        except OSError: time.sleep(0.1)
    raise AssertionError('the lab server did not answer')

def stop(cm, proc):
    "Ctrl-C, as a researcher stops it: the server shuts down cleanly."
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    cm.__exit__(None, None, None)

def links(lines) -> dict:
    return dict(x.split(': ', 1) for x in lines if x.startswith('P'))

# --- browser

def act(page, reload_done: set, code: str, go_on: bool):
    "One step of a scripted person on their page: consent, answer the check, bargain, go on (where `go_on`)."
    from playwright.sync_api import Error
    try: return step(page, page.evaluate('typeof state === "undefined" ? null : state'), reload_done, code, go_on)
    except Error as e:                 # the page moved on meanwhile (the other side acted, a game ended, a reload)
        print(code, 'retries after', str(e).splitlines()[0][:150])
        return None

def step(page, st, reload_done, code, go_on):
    if not st: return None
    if st['stage'] == 'consent': page.click('#agree')
    elif st['stage'] == 'instructions':
        for i, (q, opts, right) in enumerate(QUIZ): page.check(f'input[name=q{i}][value="{right}"]')
        page.click('#check')
    elif st['stage'] == 'game' and st['over'] and go_on: page.click('#next')
    elif st['stage'] == 'game' and not st['over'] and st['your_turn']:
        if code == 'P03' and code not in reload_done:     # a reload mid-game: back in the same game
            before = (st['game_id'], st['k'], st['role'], st['private'])
            page.reload(timeout=30_000)
            page.wait_for_selector('#app[data-stage="game"]', state='attached', timeout=15_000)
            after = page.evaluate('state')
            assert (after['game_id'], after['k'], after['role'], after['private']) == before
            reload_done.add(code)
            return st
        if code == 'P04' and code not in reload_done:          # a price that is no number: the engine's error as text
            page.fill('#price', 'ten dollars')
            page.click('#offer')
            page.wait_for_function('state.errors && state.errors.length > 0', timeout=15_000)
            text = page.locator('p.error').first.inner_text()
            assert 'wrong type' in text and '(wrong_type)' in text, text
            reload_done.add(code)
            return st
        mine, theirs, buyer = st['private']['amount'], st['their_offer'], st['role'] == 'buyer'
        noted = code == 'P04' and not any(a['who'] == 'you' for a in st['history'])   # the model reads a note first
        good = theirs and (theirs['price'] <= mine if buyer else theirs['price'] >= mine)
        if good and not noted: page.click('#accept')
        else:
            page.fill('#price', f"{mine * (0.9 if buyer else 1.1):.2f}")
            page.fill('#note', NOTE)
            page.click('#offer')
    return st

@pytest.mark.slow    # 40 s of play; 100 s in all on two shared, busy cores (the fake endpoint, Chromium, two starts)
@pytest.mark.skipif(CHROMIUM is None, reason="the browser test needs Debian's chromium (apt-get install chromium)")
def test_a_session_in_browsers(srv, tmp_path):
    from playwright.sync_api import sync_playwright
    d, port = tmp_path / 'session', free_port()
    llm = fault_agent(srv, 'ok')
    args = ['--treatment', '2:random:human', '--treatment', '1:buyer:conceder', '--treatment', f'1:seller:{llm}',
            '--treatment', '1:buyer:conceder', '--games', '2', '--deadline', '30', '--seed', '3']
    cm, proc, lines = start(d, port, 5, *args)
    admin = next(x for x in lines if x.startswith('admin: ')).split(': ', 1)[1]
    people = links(lines)
    assert list(people) == ['P01', 'P02', 'P03', 'P04', 'P05']
    restarted, reload_done, errors = False, set(), []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            pages = {}
            for code, link in people.items():          # one browser context each: no shared cookies or storage
                page = browser.new_context(viewport={'width': 1000, 'height': 900}).new_page()
                page.on('pageerror', lambda e: errors.append(str(e)))
                page.set_default_timeout(3000)
                page.goto(link)
                pages[code] = page
            pages['P05'].wait_for_selector('#decline').click()
            pages['P05'].wait_for_selector('text=You chose not to take part')
            playing = {c: p for c, p in pages.items() if c != 'P05'}
            t0 = time.monotonic()
            while time.monotonic() - t0 < 150:
                states = {c: act(p, reload_done, c, restarted) for c, p in playing.items()}
                if all(s and s['stage'] == 'payoff' for s in states.values()): break
                over = {c: s for c, s in states.items() if s and s['stage'] == 'game' and s['over']}
                if not restarted and len(over) == 4 and all(s['k'] == 1 for s in over.values()):
                    t1 = time.monotonic()
                    stop(cm, proc)                               # a server restart between games
                    cm, proc, _ = start(d, port, 5)
                    print(f'restart took {time.monotonic() - t1:.1f} s, game 1 ended {t1 - t0:.1f} s in')
                    restarted = True
                    continue                                     # the pages reconnect on their own
                time.sleep(0.05)
            print(f'played in {time.monotonic() - t0:.1f} s')
            assert restarted and reload_done == {'P03', 'P04'}
            pays = {c: p.evaluate('state') for c, p in playing.items()}
            assert all(s['stage'] == 'payoff' and len(s['games']) == 2 for s in pays.values()), pays
            for c, p in playing.items(): assert 'Your payment' in p.inner_text('#payoff')
            assert not any(p.evaluate('window.hacked') for p in pages.values())     # the note stayed text
            browser.close()
        assert not errors, errors
        page = urllib.request.urlopen(admin).read().decode()
        assert all(f'<td>{c}</td>' in page for c in people) and page.count('<td>done</td>') == 4
    finally: stop(cm, proc)
    with Store(d, create=False) as st:
        games = dict(st.transcripts())
        rows = st.rows()
        msgs = {g: st.messages(g) for g in games}
    assert len(games) == 6 and len(rows) == 6
    for t in games.values(): replay(t)                                          # the same engine, exactly
    pair = [t for t in games.values() if set(t['agents'].values()) == {'human:P01', 'human:P02'}]
    assert len(pair) == 2 and all(t['outcome']['reason'] == 'deal' for t in pair)
    fenced = [m for g, m in msgs.items() if m and 'human:P04' in games[g]['agents'].values()]
    text = json.dumps(fenced)
    assert '<opponent_message>' in text and '&lt;script&gt;' in text and '<script>' not in text
    r = subprocess.run([EXE, 'report', str(d), '--no-figures', '--n-boot', '10'], capture_output=True, text=True)
    assert r.returncode == 0 and 'human:P01' in r.stdout, r.stderr
    r = subprocess.run([EXE, 'lab', 'export', str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(d / 'lab_export.csv') as f: out = list(csv.DictReader(f))
    assert len(out) == 4 * 2 + 1
    declined = [x for x in out if x['participant.code'] == 'P05']
    assert declined[0]['participant.stage'] == 'declined' and declined[0]['participant.declined_at']
    assert {x['group.game_id'] for x in out if x['group.game_id']} == set(games)

def _browser(pw, errors: list):
    "A page of its own in headless Chromium, with its script errors collected in `errors`."
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    page = browser.new_context(viewport={'width': 1000, 'height': 1200}).new_page()
    page.on('pageerror', lambda e: errors.append(str(e)))
    page.set_default_timeout(20_000)
    return browser, page

def _pass_check(page):
    "Consent and the comprehension check, answered right."
    page.wait_for_selector('#agree').click()
    for i, (q, opts, right) in enumerate(QUIZ): page.check(f'input[name=q{i}][value="{right}"]')
    page.click('#check')
    page.wait_for_selector('#app[data-turn="1"]', state='attached')

@contextmanager
def _in_a_game(tmp_path):
    """A buyer's page in Chromium past consent and the check, in their one game against boulware (seed 5, 120 s): a
    dict of the session's `d`, `port`, `server` (what `start` gave: replace it after a restart) and `page`. At the end
    the server stops and the page's script errors are checked."""
    from playwright.sync_api import sync_playwright
    d, port, errors = tmp_path / 'session', free_port(), []
    box = {'d': d, 'port': port, 'server': start(d, port, 1, '--treatment', '1:buyer:boulware', '--games', '1',
                                                 '--deadline', '120', '--seed', '5')}
    try:
        with sync_playwright() as pw:
            browser, box['page'] = _browser(pw, errors)
            box['page'].goto(links(box['server'][2])['P01'])
            _pass_check(box['page'])
            yield box
            browser.close()
    finally: stop(*box['server'][:2])
    assert not errors, errors

NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="the browser test needs Debian's chromium")

@NEEDS_CHROMIUM
def test_the_instructions_page(tmp_path):
    """Issue 56, 8 and 11 in Chromium: no 'null' above the check on a first visit; the rules that end games are stated;
    a wrong try keeps every answer given."""
    from playwright.sync_api import sync_playwright
    d, port, errors = tmp_path / 'session', free_port(), []
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:boulware', '--games', '1')
    try:
        with sync_playwright() as pw:
            browser, page = _browser(pw, errors)
            page.goto(links(lines)['P01'])
            page.wait_for_selector('#agree').click()
            page.wait_for_selector('#quiz')
            assert 'null' not in page.inner_text('#app')
            rules = page.inner_text('#rules')
            said = ('withdraws the standing offer', 'both wait', '$40 or 1,000', '$20.00')
            assert all(x in rules for x in said), rules
            for i, a in enumerate(['no', '$20', 'no deal: surplus 0 for both']):       # the first one wrong
                page.check(f'input[name=q{i}][value="{a}"]')
            page.click('#check')
            page.wait_for_selector('#wrong')
            assert 'null' not in page.inner_text('#app')
            assert [page.is_checked(f'input[name=q{i}][value="{a}"]')
                    for i, a in enumerate(['no', '$20', 'no deal: surplus 0 for both'])] == [True] * 3
            page.check('input[name=q0][value="yes"]')
            page.click('#check')
            page.wait_for_selector('#app[data-stage="game"]', state='attached')
            browser.close()
    finally: stop(cm, proc)
    assert not errors, errors

@NEEDS_CHROMIUM
def test_the_game_page(tmp_path):
    """Issue 56, 6, 7, 8 and 11 in Chromium, against boulware: a price that is no number is refused with a sentence and
    what was typed stays; an accepted offer empties its inputs (its note does not go out again with the next offer) and
    shows at once, before the other side moves; "$1,234.50" is read as a price; the history says "They offer"; Leave
    asks first; the end is a sentence, on the game page and the payoff page."""
    with _in_a_game(tmp_path) as box:
        d, page = box['d'], box['page']
        value = page.evaluate('state.private.amount')
        page.fill('#price', 'ten dollars')
        page.fill('#note', 'kept')
        page.click('#offer')                                     # refused: said, and nothing typed is lost
        page.wait_for_function('state.errors.length > 0')
        assert 'write a number' in page.inner_text('p.error') and '(wrong_type)' in page.inner_text('p.error')
        assert (page.input_value('#price'), page.input_value('#note')) == ('ten dollars', 'kept')
        first = round(value * 0.5, 2)
        page.fill('#price', f'{first:.2f}')
        page.fill('#note', 'first note')
        page.click('#offer')
        page.wait_for_function('!state.your_turn')                  # taken (the frame that says so)
        assert (page.input_value('#price'), page.input_value('#note')) == ('', '')          # taken: emptied
        page.wait_for_function('state.your_offer !== null && !state.history.some(h => h.who === "them")')
        assert page.evaluate('state.your_offer.price') == first                           # before they move
        page.wait_for_function('state.your_turn && state.history.some(h => h.who === "them")', timeout=60_000)
        page.fill('#price', f'${value * 0.6:,.2f}')
        page.click('#offer')
        page.wait_for_function('state.history.filter(h => h.who === "you").length === 2')
        assert page.evaluate('state.history.filter(h => h.who === "you").map(h => h.text)') == ['first note', '']
        rows = page.inner_text('#history')
        assert 'They\toffer $' in rows and 'You\toffer $' in rows and 'offers' not in rows, rows
        page.wait_for_function('state.your_turn', timeout=60_000)
        page.click('#quit')
        page.wait_for_selector('#confirm')
        assert page.evaluate('state.over') is None                # not yet
        page.click('#quit-no')
        assert page.query_selector('#confirm') is None and page.evaluate('state.over') is None
        page.click('#quit')
        page.click('#quit-yes')
        page.wait_for_selector('#over')
        assert page.inner_text('#why').startswith('You left the negotiation: no deal.'), page.inner_text('#why')
        page.click('#next')
        page.wait_for_selector('#payoff')
        assert 'someone left' in page.inner_text('#app') and 'quit' not in page.inner_text('#app')
    with Store(d, create=False) as st:
        (t,) = [t for _, t in st.transcripts()]
        assert st.failures().empty
    offers = [c.args for c in calls_of(t, 'make_offer') if c.role == 'buyer']
    assert [o.get('note', '') for o in offers] == ['first note', ''] and offers[1]['price'] == round(value * 0.6, 2)
    assert t['outcome']['reason'] == 'quit'
    replay(t)

@NEEDS_CHROMIUM
def test_a_lost_connection_in_the_browser(tmp_path):
    """Issue 56, 9 in Chromium: the server stops mid-game: the page says the connection is lost and no button works;
    the same command starts it again: the page reconnects to the same game, replayed where it stopped, with its
    history, and the participant plays no extra game."""
    with _in_a_game(tmp_path) as box:
        d, page = box['d'], box['page']
        page.fill('#price', f"{page.evaluate('state.private.amount') * 0.5:.2f}")
        page.click('#offer')
        page.wait_for_function('state.your_turn && state.history.some(h => h.who === "them")', timeout=60_000)
        before = page.evaluate('[state.game_id, state.k, state.history]')
        stop(*box['server'][:2])                                 # the connection is lost
        page.wait_for_selector('#offline')
        assert 'connection' in page.inner_text('#offline') and page.query_selector_all('button')
        assert all(b.is_disabled() for b in page.query_selector_all('button'))
        box['server'] = start(d, box['port'], 1)
        assert '1 replayed' in box['server'][2][0], box['server'][2]
        page.wait_for_selector('#offline', state='detached', timeout=30_000)
        page.wait_for_function(f'state.stage === "game" && state.history.length >= {len(before[2])}')
        after = page.evaluate('[state.game_id, state.k, state.history]')
        assert after[:2] == before[:2] and after[2][:len(before[2])] == before[2]     # the same game, on
        page.wait_for_function('state.your_turn', timeout=60_000)
        page.click('#quit')
        page.click('#quit-yes')
        page.wait_for_selector('#over')
        page.click('#next')
        page.wait_for_selector('#payoff')
        assert page.evaluate('state.games.length') == 1
    assert _lab_rows(d, 'SELECT game_id, status FROM lab_games') == [('L0000', 'done')]
    with Store(d, create=False) as st: assert st.count() == 1 and st.failures().empty

# --- WebSocket clients

def _game_of(d, gid):
    with Store(d, create=False) as st: return dict(st.transcripts())[gid]

def test_leaving_and_a_restart_mid_game(tmp_path):
    """One participant leaves on their turn (their quit, scored); the server stops mid-game and, started again, replays
    the game in play where it stopped (issue 56, 9): the same game, with its history, is played on to its end, and
    the participant plays no extra game."""
    import websockets
    sys.path.insert(0, str(Path(__file__).parent))
    from lab_bot import participant
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 2, '--treatment', '2:buyer:conceder', '--games', '1', '--deadline', '20',
                            '--leave-after', '1')
    people = links(lines)

    async def hold(link, close: bool):
        "Consent, pass the check, then on the first turn close the page (`close`), or offer and hold the next turn."
        ws = await websockets.connect(link.replace('http://', 'ws://').replace('/p/', '/ws/'))
        while True:
            st = json.loads(await ws.recv())
            if st['stage'] == 'consent': await ws.send(json.dumps({'type': 'consent', 'agree': True}))
            if st['stage'] == 'instructions':
                await ws.send(json.dumps({'type': 'quiz', 'answers': ['no', '$80', None]}))   # wrong: asked again
                st = json.loads(await ws.recv())
                assert st['stage'] == 'instructions' and st['wrong'] == [0, 1, 2]
                await ws.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
            if st['stage'] == 'game' and st['your_turn']:
                if close: await ws.close()
                if close or st['history']: return ws, st
                await ws.send(_act('make_offer', 1, True, price=round(st['private']['amount'] / 2, 2)))

    async def first():
        (_, gone), (ws, held) = await asyncio.gather(hold(people['P01'], True), hold(people['P02'], False))
        for _ in range(200):                          # P01 is away on their turn for more than --leave-after
            if gone['game_id'] in _stored_ids(d): break
            await asyncio.sleep(0.1)
        return gone, held, ws
    try:
        gone, held, ws = asyncio.run(first())
        t = _game_of(d, gone['game_id'])
        assert (t['outcome']['reason'], t['outcome']['by']) == ('quit', 'buyer')
        assert [r['id'] for r in t['log'] if r.get('tool') == 'quit_negotiation'] == ['lab:left']
        stop(cm, proc)                                # P02's game is in play: replayed when the server is back
        cm, proc, lines = start(d, port, 2)
        assert 'resumed: 0 game(s) found stored, 1 replayed to go on where they stopped, 0 cut off' in lines[0], lines
        async def rest(): return await asyncio.gather(participant(people['P01'], limit=60),
                                                      participant(people['P02'], limit=60))
        p1, p2 = asyncio.run(rest())
    finally: stop(cm, proc)
    assert [g['reason'] for g in p1['payoff']['games']] == ['quit']
    assert len(p2['payoff']['games']) == 1 and p2['payoff']['games'][0]['reason'] != 'server_restart'
    back = [f for f in p2['frames'] if f['stage'] == 'game']
    assert {f['game_id'] for f in back} == {held['game_id']} and {f['k'] for f in back} == {1}    # the same game
    again = next(f for f in back if len(f['history']) >= len(held['history']))          # replayed: its history back
    assert again['history'][:len(held['history'])] == held['history'] and held['history'], (again, held)
    with Store(d, create=False) as st:
        assert st.count() == 2 and st.failures().empty and held['game_id'] in st.done_ids()
        replay(dict(st.transcripts())[held['game_id']])               # one game, as the engine plays it
    r = subprocess.run([EXE, 'lab', 'export', str(d), '--out', str(tmp_path / 'x.csv')], capture_output=True, text=True)
    with open(tmp_path / 'x.csv') as f: rows = list(csv.DictReader(f))
    assert [(x['participant.code'], x['group.status']) for x in rows] == [('P01', 'done'), ('P02', 'done')]

def _numbers(x) -> list:
    "Every number in a JSON value."
    if isinstance(x, dict): return [n for v in x.values() for n in _numbers(v)]
    if isinstance(x, list): return [n for v in x for n in _numbers(v)]
    return [x] if isinstance(x, (int, float)) and not isinstance(x, bool) else []

def _stored_ids(d) -> set:
    import sqlite3
    p = Path(d) / 'games.sqlite'
    if not p.exists(): return set()
    con = sqlite3.connect(f'file:{p}?mode=ro', uri=True, timeout=30)
    try: return {r[0] for r in con.execute('SELECT game_id FROM games')}
    except sqlite3.OperationalError: return set()
    finally: con.close()

def test_twenty_participants_at_once(tmp_path):
    """Load on loopback: 20 WebSocket participants at once (5 pairs, 10 against a scripted agent) finish with no game
    lost or stored twice; the server's peak memory and the action-to-answer latency are printed (`pytest -s`)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from lab_bot import participant
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 20, '--treatment', '10:random:human', '--treatment', '10:random:conceder',
                            '--games', '1', '--deadline', '8')
    people, lag = links(lines), []
    try:
        async def go(): return await asyncio.gather(*[participant(x, lag, 120) for x in people.values()])
        t0 = time.monotonic()
        done = asyncio.run(go())
        wall = time.monotonic() - t0
        peak = next(int(x.split()[1]) for x in open(f'/proc/{proc.pid}/status') if x.startswith('VmHWM'))
    finally: stop(cm, proc)
    assert all(len(x['payoff']['games']) == 1 for x in done)
    with Store(d, create=False) as st:
        games = dict(st.transcripts())
        assert st.failures().empty and len(games) == 5 + 10 == st.count()
    seats = sorted(a for t in games.values() for a in t['agents'].values() if a.startswith('human:'))
    assert seats == sorted(f'human:{c}' for c in people)       # each participant in exactly one stored game
    for x in done:                                             # each saw their own number, never the other's
        views = [f for f in x['frames'] if f['stage'] == 'game']
        assert views and not any(k in json.dumps(f) for f in views for k in ('buyer_value', 'seller_cost'))
        for f in views:
            sc = games[f['game_id']]['scenario']
            own, other = (sc['buyer_value'], sc['seller_cost'])[::1 if f['role'] == 'buyer' else -1]
            rest = {k: v for k, v in f.items() if k not in ('history', 'your_offer', 'their_offer', 'over')}
            assert f['private']['amount'] == own / 100 and other / 100 not in _numbers(rest)   # prices aside
    lag.sort()
    q = lambda p: lag[min(len(lag) - 1, int(p * len(lag)))] * 1000
    print(f'\n20 participants, {len(games)} games in {wall:.1f} s; server peak RSS {peak / 1024:.0f} MiB; '
          f'{len(lag)} answers: median {q(0.5):.0f} ms, p95 {q(0.95):.0f} ms, max {lag[-1] * 1000:.0f} ms')

# --- integrity (issue 56): raw WebSocket frames a page would never send

def _ws(link: str) -> str: return link.replace('http://', 'ws://').replace('/p/', '/ws/')

def _lab_rows(d, sql: str, args=()) -> list:
    "Rows of the session's lab.sqlite, read from this process (read-only)."
    import sqlite3
    con = sqlite3.connect(f'file:{Path(d) / "lab.sqlite"}?mode=ro', uri=True, timeout=30)
    try: return con.execute(sql, args).fetchall()
    finally: con.close()

async def _play(ws, frames: list, on_turn=None, on_over=None) -> dict:
    "Play on a participant's open socket to the payoff page, as lab_bot does; the hooks may send other frames."
    from lab_bot import move
    while True:
        st = json.loads(await ws.recv())
        frames.append(st)
        if st.get('stage') == 'payoff': return st
        if st.get('stage') != 'game': continue
        if st['over']: await ws.send(json.dumps({'type': 'next'}))
        if st['over'] and on_over: await on_over(ws, st)
        if not st['over'] and st['your_turn']:
            if not (on_turn and await on_turn(ws, st)): await ws.send(json.dumps(move(st)))

def test_one_game_at_a_time(tmp_path):
    """Five 'next' frames right after the check, and a double click on Continue after each game, start no extra game:
    the participant plays their two games one after the other and is paid for those two."""
    import websockets
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:conceder', '--games', '2', '--deadline', '10')
    frames = []

    async def go():
        async with websockets.connect(_ws(links(lines)['P01'])) as ws:
            await ws.send(json.dumps({'type': 'consent', 'agree': True}))
            await ws.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
            for _ in range(5): await ws.send(json.dumps({'type': 'next'}))          # one burst
            async def again(ws, st): await ws.send(json.dumps({'type': 'next'}))    # the second click
            return await _play(ws, frames, on_over=again)
    try: pay = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    rows = _lab_rows(d, 'SELECT game_id, status, started_at, ended_at FROM lab_games ORDER BY idx')
    assert [r[:2] for r in rows] == [('L0000', 'done'), ('L0001', 'done')], rows
    assert rows[1][2] >= rows[0][3]                           # the second game began after the first was stored
    seen = [f['game_id'] for f in frames if f.get('stage') == 'game']
    assert [g for i, g in enumerate(seen) if i == 0 or g != seen[i - 1]] == ['L0000', 'L0001']   # never mixed
    with Store(d, create=False) as st: assert st.count() == 2 and st.failures().empty
    dollars = [g['surplus'] for g in pay['games']]
    assert len(dollars) == 2 and pay['payoff'] == pytest.approx(max(0, 5 + 0.05 * sum(dollars)), abs=0.01)
    assert _lab_rows(d, 'SELECT stage, payoff FROM participants') == [('done', pay['payoff'])]

def test_a_malformed_action_cannot_end_a_game(tmp_path):
    """On their turn, actions no tool stands for (a tool that is a list, an object or no tool's name; arguments that are
    no object) and a frame that is no JSON are refused with stable codes; the game goes on, is scored, and is the
    participant's only one (no new item)."""
    import websockets
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:conceder', '--games', '1', '--deadline', '10')
    bad = [{'type': 'act', 'tool': ['make_offer']}, {'type': 'act', 'tool': {'make_offer': 1}},
           {'type': 'act', 'tool': 'fly', 'args': {}}, {'type': 'act', 'tool': 'make_offer', 'args': [30]}]
    frames, refused = [], []

    async def go():
        async with websockets.connect(_ws(links(lines)['P01'])) as ws:
            await ws.send('{"type": "consent"')                                       # no JSON
            while 'error' not in (m := json.loads(await ws.recv())): pass
            refused.append(m)
            await ws.send(json.dumps({'type': 'consent', 'agree': True}))
            await ws.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
            async def turn(ws, st):
                "The next malformed action while any is left: one at a time, each answered by its refusal."
                if not bad: return False
                await ws.send(json.dumps(bad.pop(0)))
                return True
            return await _play(ws, frames, on_turn=turn)
    try: pay = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    assert refused[-1]['error'] == 'invalid_json'
    texts = {e['text'] for f in frames if f.get('stage') == 'game' for e in f['errors']}
    shown = {t.split('(')[-1] for t in texts if t.endswith('nothing was done')}    # the malformed ones' refusals
    assert not bad and shown == {'unknown_tool): nothing was done', 'arguments_not_object): nothing was done'}, texts
    # any other is the engine's refusal of a well-formed move the bot made on a state that changed meanwhile
    assert all(t.endswith('more refused action(s) end the game)') for t in texts if not t.endswith('done')), texts
    assert {f['game_id'] for f in frames if f.get('stage') == 'game'} == {'L0000'}
    assert _lab_rows(d, 'SELECT game_id, status FROM lab_games') == [('L0000', 'done')]
    with Store(d, create=False) as st:
        assert st.count() == 1 and st.failures().empty
        assert dict(st.transcripts())['L0000']['outcome']['reason'] != 'agent_error'
    assert len(pay['games']) == 1

def test_one_server_per_directory(tmp_path):
    """While a server runs a game, the same command again (same port, or another) stops with one line and exit status
    2 and writes nothing; a server for another directory on a port in use stops before it creates its directory."""
    import websockets
    d, port, other = tmp_path / 'session', free_port(), free_port()
    args = ['--treatment', '1:buyer:conceder', '--games', '1', '--deadline', '60']
    cm, proc, lines = start(d, port, 1, *args)

    def again(where, at):
        return subprocess.run([EXE, 'lab', 'run', str(where), '--port', str(at), *args], capture_output=True,
                              text=True, timeout=120)
    async def go():
        async with websockets.connect(_ws(links(lines)['P01'])) as ws:
            await ws.send(json.dumps({'type': 'consent', 'agree': True}))
            await ws.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
            while not ((st := json.loads(await ws.recv()))['stage'] == 'game' and st['your_turn']): pass
            files = {p.name: p.read_bytes() for p in d.iterdir()}
            runs = [await asyncio.to_thread(again, *x) for x in ((d, port), (d, other), (tmp_path / 'new', port))]
            assert {p.name: p.read_bytes() for p in d.iterdir()} == files           # not one byte written
            await ws.send(json.dumps({'type': 'act', 'tool': 'quit_negotiation', 'args': {}}))
            while json.loads(await ws.recv())['stage'] != 'payoff':
                await ws.send(json.dumps({'type': 'next'}))
            return runs
    try: runs = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    for r, why in zip(runs, ('in use', 'another lab server is running', 'in use')):
        assert r.returncode == 2 and not r.stdout and len(r.stderr.splitlines()) == 1 and why in r.stderr, r
    assert not (tmp_path / 'new').exists()
    assert _lab_rows(d, 'SELECT game_id, status, reason FROM lab_games') == [('L0000', 'done', 'quit')]
    with Store(d, create=False) as st: assert st.count() == 1 and st.failures().empty

def test_the_scenario_seed_is_secret(tmp_path):
    """Without --seed, a session's scenarios come from a fresh seed kept in lab.sqlite: the first game's private number
    is not seed 0's but is the stored seed's (reproducible from the store), and no page shows the seed."""
    import websockets
    from bilateral.scenarios import sample_scenarios
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:conceder', '--games', '1', '--deadline', '30')
    admin = next(x for x in lines if x.startswith('admin: ')).split(': ', 1)[1]

    async def go():
        async with websockets.connect(_ws(links(lines)['P01'])) as ws:
            await ws.send(json.dumps({'type': 'consent', 'agree': True}))
            await ws.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
            texts = [await ws.recv()]
            while json.loads(texts[-1])['stage'] != 'game': texts.append(await ws.recv())
            return texts
    try:
        texts = asyncio.run(asyncio.wait_for(go(), 300))
        pages = texts + [urllib.request.urlopen(admin).read().decode(), urllib.request.urlopen(links(lines)['P01'])
                         .read().decode()]
    finally: stop(cm, proc)
    session = json.loads(_lab_rows(d, "SELECT value FROM meta WHERE key='session'")[0][0])
    seed, game = session['seed'], json.loads(texts[-1])
    seen = (game['item']['title'], round(game['private']['amount'] * 100))
    sc = sample_scenarios(1, session['preset'], seed)[0]
    assert seen == (sc.item.title, sc.buyer_value)                            # the store's seed made this game
    sc0 = sample_scenarios(1, session['preset'], 0)[0]
    assert seed != 0 and seen != (sc0.item.title, sc0.buyer_value)            # not the default seed's values
    assert not any(str(seed) in p for p in pages)

def test_a_flood_is_bounded(tmp_path):
    """One participant sends 200 wrong answers in one burst and a frame of 300 KB while another plays: the burst beyond
    the participant's bucket is refused (too_fast), the large frame closes their socket (1009), the kept tries stay
    small and numbered, the other's game is played and stored, and the flooder can still pass and play."""
    import websockets
    from lab_bot import participant
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 2, '--treatment', '2:buyer:conceder', '--games', '1', '--deadline', '10')
    people = links(lines)
    wrong, right = {'type': 'quiz', 'answers': ['no', '$80', None]}, {'type': 'quiz', 'answers': [q[2] for q in QUIZ]}

    async def flood():
        async with websockets.connect(_ws(people['P01'])) as ws:
            await ws.send(json.dumps({'type': 'consent', 'agree': True}))
            while json.loads(await ws.recv())['stage'] != 'instructions': pass
            for _ in range(200): await ws.send(json.dumps(wrong))                  # one burst
            got = [json.loads(await ws.recv()) for _ in range(200)]                # one answer each
            await ws.send(json.dumps({'type': 'quiz', 'answers': ['x' * 100_000] * 3}))
            try:
                while True: await asyncio.wait_for(ws.recv(), 60)
            except websockets.ConnectionClosed as e: closed = e.rcvd and e.rcvd.code
            except asyncio.TimeoutError: closed = None                             # still open: the frame was taken
        async with websockets.connect(_ws(people['P01'])) as ws:
            while True:                                           # the bucket refills: the check, passed, then play
                await ws.send(json.dumps(right))
                while (st := json.loads(await ws.recv())).get('stage') == 'instructions': pass
                if st.get('error') != 'too_fast': break
                await asyncio.sleep(1)
            pay = await _play(ws, [st])
        return got, closed, pay
    async def both(): return await asyncio.gather(flood(), participant(people['P02'], limit=150))
    try: (got, closed, pay), other = asyncio.run(asyncio.wait_for(both(), 300))
    finally: stop(cm, proc)
    kinds = [g.get('error') or g['stage'] for g in got]
    assert set(kinds) == {'instructions', 'too_fast'} and closed == 1009, (set(kinds), closed)
    tries = json.loads(_lab_rows(d, "SELECT answers FROM participants WHERE code='P01'")[0][0])
    assert len(tries) <= 20 and len(json.dumps(tries)) < 5000
    assert tries[-1]['n'] == kinds.count('instructions') + 1 and tries[-1]['answers'] == right['answers']
    assert len(pay['games']) == 1 and len(other['payoff']['games']) == 1
    with Store(d, create=False) as st: assert st.count() == 2 and st.failures().empty

# --- the participant's page (issue 56, 6-12): raw WebSockets, as the page talks to the server

async def _until(ws, frames: list, pred, limit: float = 60) -> dict:
    "The next frame for which `pred` holds, within `limit` seconds; every frame read is kept in `frames`."
    async def read():
        while True:
            frames.append(st := json.loads(await ws.recv()))
            if pred(st): return st
    return await asyncio.wait_for(read(), limit)

async def _enter(link: str):
    "A participant's socket, past consent and the check."
    import websockets
    ws = await websockets.connect(_ws(link))
    await ws.send(json.dumps({'type': 'consent', 'agree': True}))
    await ws.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
    return ws

async def _pair_up(people: dict) -> tuple:
    "P01's and P02's (socket, frames) once their game is on: the buyer's first (the first mover)."
    (wa, fa), (wb, fb) = (await _enter(people['P01']), []), (await _enter(people['P02']), [])
    sa, sb = await asyncio.gather(_until(wa, fa, _in_game), _until(wb, fb, _in_game))
    return ((wa, fa), (wb, fb)) if sa['role'] == 'buyer' else ((wb, fb), (wa, fa))

def _codes(st) -> list: return [n['code'] for n in st.get('notices', [])]

def _in_game(st) -> bool: return st.get('stage') == 'game' and not st['over']

def _act(tool, seq=None, then_wait=False, **args) -> str:
    return json.dumps({'type': 'act', 'tool': tool, 'args': args, 'then_wait': then_wait, 'seq': seq})

def test_own_offer_at_once_and_the_rules_that_end_a_game(tmp_path):
    """Two participants. The first mover's offer ("$40") is on their own page before the other side moves;
    the counter-offer ("1,000") is read as a number and its withdrawal of the first offer is announced to both; twelve
    entries that are no number are refused (wrong_type) without ending the game or counting; then both wait, which
    ends the game as both_idle, announced beforehand and explained after in words."""
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 2, '--treatment', '2:random:human', '--games', '1', '--deadline', '60')
    people = links(lines)

    async def go():
        (wa, fa), (wb, fb) = await _pair_up(people)
        await _until(wa, fa, lambda s: s.get('your_turn'))
        t0 = time.monotonic()
        await wa.send(_act('make_offer', 1, True, price='$40', note='first'))
        mine = await _until(wa, fa, lambda s: s.get('your_offer') is not None, 20)
        shown_after = time.monotonic() - t0
        assert not any(h['who'] == 'them' for h in mine['history'])                     # before the other side moved
        await _until(wb, fb, lambda s: s.get('your_turn'))
        await wb.send(_act('make_offer', 1, True, price='1,000'))
        theirs = await _until(wb, fb, lambda s: s.get('your_offer') is not None, 20)
        await _until(wa, fa, lambda s: s.get('your_turn'))
        refused = []
        for i in range(12):                                            # one at a time, as clicks come
            await wa.send(_act('make_offer', 10 + i, True, price='ten dollars'))
            refused.append(await _until(wa, fa, lambda s: s.get('errors'), 10))
        await wa.send(_act('wait_for_response', 30))
        warned = await _until(wb, fb, lambda s: s.get('your_turn'))
        await wb.send(_act('wait_for_response', 2))
        ends = await asyncio.gather(_until(wa, fa, lambda s: s.get('over')), _until(wb, fb, lambda s: s.get('over')))
        for ws in (wa, wb): await ws.close()
        return mine, shown_after, theirs, refused, warned, ends, fa
    try: mine, shown_after, theirs, refused, warned, ends, fa = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    assert mine['your_offer']['price'] == 40.0 and mine['done_seq'] == 1, shown_after   # shown before they moved
    assert [h['text'] for h in mine['history'] if h['who'] == 'you'] == ['first']
    assert theirs['your_offer']['price'] == 1000.0 and theirs['their_offer'] is None
    assert 'offer_withdrawn' in _codes(theirs)                                   # "Your offer withdrew theirs"
    assert any('offer_withdrawn' in _codes(f) and f['your_offer'] is None for f in fa)   # "...withdrew yours"
    assert all(r['your_turn'] and r['errors'][0]['code'] == 'wrong_type' and 'write a number' in r['errors'][0]['text']
               for r in refused)
    assert 'they_waited' in _codes(warned) and 'the game ends' in warned['notices'][-1]['text']
    assert all(e['over']['reason'] == 'both_idle' and 'both waited' in e['over']['text'] for e in ends)
    with Store(d, create=False) as st: (t,) = [t for _, t in st.transcripts()]
    assert t['outcome']['reason'] == 'both_idle' and not any(r.get('result', {}).get('ok') is False for r in t['log'])
    assert [c.args['price'] for c in calls_of(t, 'make_offer')] == [40.0, 1000.0]

def test_nobody_is_held_hostage(tmp_path):
    """The side holding the turn does nothing: after --turn-limit seconds the turn passes to the other side, both pages
    say so, and the waiting side sees how long the other has left. Then a page closes: the other side is told within
    seconds, and the game ends --leave-after seconds later with a sentence that says the partner left."""
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 2, '--treatment', '2:random:human', '--games', '1', '--deadline', '90',
                            '--turn-limit', '4', '--leave-after', '3')
    people = links(lines)

    async def go():
        (wa, fa), (wb, fb) = await _pair_up(people)
        await _until(wa, fa, lambda s: s.get('your_turn'))
        waiting = await _until(wb, fb, lambda s: s.get('their_turn_until') is not None, 20)
        t0 = time.monotonic()
        passed = await _until(wa, fa, lambda s: 'turn_passed' in _codes(s), 10)         # A did nothing
        woken = await _until(wb, fb, lambda s: s.get('your_turn'), 10)
        held = time.monotonic() - t0
        await wb.send(_act('make_offer', 1, True, price=50))
        await _until(wa, fa, lambda s: s.get('your_turn'), 10)
        await wa.close()                                                               # A's tab closes on A's move
        t1 = time.monotonic()
        told = await _until(wb, fb, lambda s: 'partner_away' in _codes(s), 10)
        told_after = time.monotonic() - t1
        end = await _until(wb, fb, lambda s: s.get('over'), 30)
        await wb.close()
        return waiting, passed, woken, held, told, told_after, end, time.monotonic() - t1
    try: waiting, passed, woken, held, told, told_after, end, ended_after = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    assert waiting['their_turn_until'] <= waiting['clock'] + 4.01 and held < 7, (waiting, held)
    assert not passed['your_turn'] and 'they_waited' in _codes(woken)
    assert told_after < 4 and told['partner_away'] is not None and '3 seconds' in told['notices'][-1]['text']
    assert ended_after < 10 and end['over']['reason'] == 'quit' and 'page closed' in end['over']['text'], end['over']
    with Store(d, create=False) as st: (t,) = [t for _, t in st.transcripts()]
    assert [r['id'] for r in t['log'] if r.get('tool')] [-1] == 'lab:left'
    assert 'lab:timeout' in [r.get('id') for r in t['log']]

def test_payments_are_capped_and_a_missing_partner_is_replaced(tmp_path):
    """With --rate 100 one deal would pay far more than the cap: each payment stops at --cap. A participant whose
    partner never comes is told how long they may wait and plays the fallback agent after --match-wait seconds."""
    sys.path.insert(0, str(Path(__file__).parent))
    from lab_bot import participant
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 3, '--treatment', '2:random:human', '--treatment', '1:buyer:conceder',
                            '--games', '1', '--deadline', '20', '--rate', '100', '--cap', '5.5', '--match-wait', '2')
    people = links(lines)
    try:
        async def go(): return await asyncio.gather(participant(people['P01'], limit=90),
                                                    participant(people['P03'], limit=90))
        p1, p3 = asyncio.run(go())
    finally: stop(cm, proc)
    waiting = [f for f in p1['frames'] if f['stage'] == 'waiting']
    assert waiting and '2 seconds' in waiting[0]['why'] and 'computer program' in waiting[0]['why']
    assert _lab_rows(d, "SELECT buyer || ' ' || seller FROM lab_games WHERE buyer LIKE '%P01' OR seller LIKE '%P01'"
                     ) in ([('human:P01 boulware',)], [('boulware human:P01',)])
    for p in (p1, p3):
        pay, gains = p['payoff'], sum(g['surplus'] for g in p['payoff']['games'])
        assert pay['cap'] == 5.5 and pay['payoff'] == min(5.5, max(0, round(5 + 100 * gains, 2))) <= 5.5, pay
    assert any(p['payoff']['payoff'] == 5.5 for p in (p1, p3))            # the cap did bind
    assert sorted(x[0] for x in _lab_rows(d, 'SELECT payoff FROM participants WHERE payoff IS NOT NULL')) == \
        sorted([p1['payoff']['payoff'], p3['payoff']['payoff']])

def test_partners_change_between_games(tmp_path):
    "Four participants play two games each: nobody meets the same partner twice (stranger matching)."
    sys.path.insert(0, str(Path(__file__).parent))
    from lab_bot import participant
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 4, '--treatment', '4:random:human', '--games', '2', '--deadline', '15')
    people = links(lines)
    try:
        async def go(): return await asyncio.gather(*[participant(x, limit=150) for x in people.values()])
        done = asyncio.run(go())
    finally: stop(cm, proc)
    assert all(len(x['payoff']['games']) == 2 for x in done)
    pairs = [frozenset((b, s)) for b, s in _lab_rows(d, 'SELECT buyer, seller FROM lab_games ORDER BY idx')]
    assert len(pairs) == 4 and len(set(pairs)) == 4, pairs
