# %% export
from __future__ import annotations
import argparse, asyncio, csv, html, json, math, secrets, sqlite3, sys, time
from fastcore.basics import patch
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from bilateral.core import BilateralError, ConfigError, EndReason, Role, derive_seed, fmt_money
from bilateral.protocol import ERROR_CODES, TOOLS, Limits, Rules, ToolCall, ToolError, check_call
from bilateral.engine import Engine
from bilateral.agents import make_agent
from bilateral.scenarios import DEFAULT_PRESET, sample_scenarios, value_model
from bilateral.metrics import game_row
from bilateral.store import Store
from bilateral.play import _failed


# %%
import tempfile
from fastcore.test import test_eq, test_fail
from bilateral.core import Item, Scenario
from bilateral.play import run_sync

# %% md
## A session: treatments and money

# %% md
A session is a list of treatments. Each treatment names how many participants it has, their role (`buyer`, `seller`,
or `random`: drawn once per participant) and their opponent: any agent spec the package knows (a scripted strategy, an
`openai:` endpoint, a local model), or `human`, another participant of the same treatment, matched by the server.

# %% export
HUMAN = 'human'   # the opponent of a treatment whose participants the server matches with each other

@dataclass(frozen=True)
class Treatment:
    "Participants who play one role against one kind of opponent."
    n: int                 # how many participants
    role: str              # 'buyer', 'seller', or 'random' (drawn per participant; per game for two participants)
    opponent: str          # an agent spec, or 'human': another participant of this treatment

def parse_treatment(text: str) -> Treatment:
    "`N:ROLE:OPPONENT`, e.g. `2:random:human` or `1:buyer:boulware`; `ConfigError` naming what is wrong."
    parts = text.split(':', 2)
    if len(parts) != 3 or not parts[0].isdigit() or int(parts[0]) < 1:
        raise ConfigError(f'a treatment is N:ROLE:OPPONENT (e.g. 2:random:human, 1:buyer:boulware), got {text!r}')
    n, role, opp = int(parts[0]), parts[1], parts[2]
    if role not in ('buyer', 'seller', 'random'):
        raise ConfigError(f"a treatment's role is buyer, seller or random, got {role!r} in {text!r}")
    if opp == HUMAN and role != 'random':
        raise ConfigError(f'two participants play each other in roles drawn per game: use random:human, not {text!r}')
    if opp == HUMAN and n % 2: raise ConfigError(f'participants who play each other come in pairs: {text!r} has {n}')
    if opp != HUMAN: make_agent(opp).check()
    return Treatment(n, role, opp)


# %%
test_eq(parse_treatment('1:seller:boulware'), Treatment(1, 'seller', 'boulware'))
test_fail(lambda: parse_treatment('2:buyer:human'), contains='random:human')
test_fail(lambda: parse_treatment('3:random:human'), contains='pairs')
test_fail(lambda: parse_treatment('buyer:boulware'), contains='N:ROLE:OPPONENT')
parse_treatment('2:random:human')

# %% export
CONSENT = ('This is a study of bargaining. You will trade an item with a counterpart, in your browser, for a few '
           'minutes per game. You are paid a show-up fee plus an amount that grows with the surplus of your deals. '
           'We record your moves and messages under a code, never your name. You may stop at any time.')
INSTRUCTIONS = ('You are a buyer or a seller of one item. A buyer has a private value (the most the item is worth to '
                'them); a seller has a private cost (the least they can sell for without a loss). Your counterpart '
                'does not see your number, and you do not see theirs. Make binding offers, accept or reject theirs, '
                'send messages, or wait. A deal happens when one side accepts the standing offer of the other. '
                'Your surplus is value minus price for a buyer, price minus cost for a seller; without a deal it is 0. '
                'The clock runs in real time: when it reaches the deadline, the game ends without a deal.')

# %%
print(CONSENT)

# %% export
@dataclass(frozen=True)
class Session:
    "What a researcher fixes for one session of the lab."
    treatments: tuple                  # `Treatment`s; participants get codes P01, P02, ... in this order
    preset: str = DEFAULT_PRESET       # the value model of the scenarios
    games: int = 2                     # scored games per participant
    deadline: float = 120.0            # seconds of each game, on the wall clock
    fee: float = 5.0                   # the show-up fee, in money
    rate: float = 0.05                 # money per dollar of the participant's surplus
    consent: str = CONSENT             # the consent text
    instructions: str = INSTRUCTIONS   # the instructions before the comprehension check
    seed: int = 0                      # the session's seed: scenarios, roles, the engines' latencies
    leave_after: float = 30.0          # seconds a participant may be away on their turn before they count as gone

    def __post_init__(self):
        value_model(self.preset)
        if not (self.games >= 1 and self.deadline > 0 and self.fee >= 0 and self.rate >= 0 and self.leave_after > 0):
            raise ConfigError(f'games >= 1, deadline > 0, fee >= 0, rate >= 0, leave_after > 0: {self}')
        if not self.treatments: raise ConfigError('a session needs at least one treatment')

# %%
test_fail(lambda: Session((Treatment(1, 'buyer', 'boulware'),), deadline=0), contains='deadline > 0')
test_fail(lambda: Session((Treatment(1, 'buyer', 'boulware'),), preset='nope'), contains='unknown preset')
Session((Treatment(1, 'buyer', 'boulware'),), deadline=60).deadline

# %% export
def session_json(s: Session) -> dict:
    "A session as plain JSON (stored with the session, so that a restart resumes it)."
    return {**asdict(s), 'treatments': [asdict(t) for t in s.treatments]}

def session_from_json(d: dict) -> Session:
    return Session(**{**d, 'treatments': tuple(Treatment(**t) for t in d['treatments'])})

# %%
s = Session((Treatment(2, 'random', 'human'), Treatment(1, 'seller', 'boulware')), games=1, deadline=5)
test_eq(session_from_json(json.loads(json.dumps(session_json(s)))), s)
session_json(s)['treatments']

# %% md
## The payoff rule

The participant is paid a show-up fee plus `rate` money for each dollar of surplus they made over their scored games
(their own surplus: value minus price for a buyer, price minus cost for a seller, 0 without a deal); a deal beyond
their own number is a loss that counts against the rest, and the payment never goes below 0. A game that could not be
played (a model's endpoint down, the server stopped mid-game) is not scored, and the participant plays another one in
its place (at most `2 * games + 2` games in all).

# %% export
def surplus(role: Role, reservation: int, price: int | None) -> int:
    "A party's surplus in cents: value - price for the buyer, price - cost for the seller, 0 without a deal."
    if price is None: return 0
    return reservation - price if role is Role.BUYER else price - reservation

def payoff(s: Session, surpluses: list) -> float:
    "The fee plus `rate` money per dollar of surplus over the scored games; never below 0."
    return round(max(0.0, s.fee + s.rate * sum(surpluses) / 100), 2)


# %%
paid = Session((Treatment(2, 'random', 'human'),), fee=5, rate=0.1)
test_eq(surplus(Role.BUYER, 10_000, 8_000), 2_000)           # value $100, price $80: $20
test_eq(surplus(Role.SELLER, 6_000, None), 0)                # no deal
test_eq(payoff(paid, [2_000, 0, 1_550]), 5 + 0.1 * 35.5)
test_eq(payoff(paid, [-100_000]), 0)                         # a big loss: the payment stops at 0
payoff(paid, [2_000, 0, 1_550])

# %% md
## The lab's own file

# %% export
LAB_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS participants (
    code TEXT PRIMARY KEY, token TEXT UNIQUE NOT NULL, treatment INTEGER NOT NULL, role TEXT NOT NULL,
    opponent TEXT NOT NULL, stage TEXT NOT NULL, consent_at REAL, declined_at REAL, answers TEXT NOT NULL,
    passed_at REAL, finished_at REAL, payoff REAL);
CREATE TABLE IF NOT EXISTS lab_games (
    game_id TEXT PRIMARY KEY, idx INTEGER NOT NULL, buyer TEXT NOT NULL, seller TEXT NOT NULL, status TEXT NOT NULL,
    started_at REAL NOT NULL, ended_at REAL, reason TEXT, price REAL, buyer_surplus REAL, seller_surplus REAL);
"""
LAB_FILE = 'lab.sqlite'

def open_lab(d: Path) -> sqlite3.Connection:
    "The lab's database in the session directory `d` (beside the games' `games.sqlite`)."
    con = sqlite3.connect(Path(d) / LAB_FILE, timeout=30, isolation_level=None, check_same_thread=False)
    con.execute('PRAGMA journal_mode=WAL')
    con.executescript(LAB_SCHEMA)
    return con

# %%
d = Path(tempfile.mkdtemp())
[r[0] for r in open_lab(d).execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]

# %% export
def _code(i: int, total: int) -> str: return f'P{i + 1:0{max(2, len(str(total)))}d}'

def _role_of(s: Session, t: Treatment, code: str) -> str:
    "A participant's role: the treatment's, drawn once per participant for `random` against an agent."
    if t.role != 'random' or t.opponent == HUMAN: return t.role
    return ('buyer', 'seller')[derive_seed(s.seed, 'role', code) % 2]

# %%
test_eq([_code(i, 120) for i in (0, 6, 119)], ['P001', 'P007', 'P120'])
[_role_of(s, s.treatments[1], c) for c in ('P01', 'P02', 'P03')]

# %% export
def create_session(d: Path, s: Session) -> sqlite3.Connection:
    "Write a new session into `d` (or check that `d` holds this one): its participants, tokens and admin token."
    con = open_lab(d)
    old = con.execute("SELECT value FROM meta WHERE key='session'").fetchone()
    if old:
        if json.loads(old[0]) != json.loads(json.dumps(session_json(s))):
            raise ConfigError(f'{d} holds another session; run `bilateral lab run {d}` alone to resume it, '
                              'or use a new directory')
        return con
    total, i = sum(t.n for t in s.treatments), 0
    with con:
        con.execute('BEGIN')
        con.execute("INSERT INTO meta VALUES ('session', ?)", (json.dumps(session_json(s)),))
        con.execute("INSERT INTO meta VALUES ('admin_token', ?)", (secrets.token_urlsafe(24),))
        for k, t in enumerate(s.treatments):
            for _ in range(t.n):
                code = _code(i, total)
                con.execute('INSERT INTO participants VALUES (?,?,?,?,?,?,NULL,NULL,?,NULL,NULL,NULL)',
                            (code, secrets.token_urlsafe(18), k, _role_of(s, t, code), t.opponent, 'consent', '[]'))
                i += 1
    return con

# %%
con = create_session(d, s)
test_eq(create_session(d, s).execute('SELECT COUNT(*) FROM participants').fetchone(), (3,))    # the same: kept
test_fail(lambda: create_session(d, replace(s, games=3)), contains='holds another session')
con.execute('SELECT code, treatment, role, opponent, stage FROM participants').fetchall()

# %% export
def load_session(con: sqlite3.Connection) -> Session:
    row = con.execute("SELECT value FROM meta WHERE key='session'").fetchone()
    if not row: raise ConfigError('no lab session here: start one with `bilateral lab run DIR --treatment ...`')
    return session_from_json(json.loads(row[0]))

def admin_token(con) -> str: return con.execute("SELECT value FROM meta WHERE key='admin_token'").fetchone()[0]

def links(con, base: str) -> list[tuple[str, str]]:
    "(code, link) of every participant: one unguessable link each."
    return [(c, f'{base}/p/{t}') for c, t in con.execute('SELECT code, token FROM participants ORDER BY code')]

# %%
test_eq(load_session(con), s)
test_eq(len({link for _, link in links(con, '')}), 3)
assert len(admin_token(con)) >= 32
links(con, 'http://127.0.0.1:8000')[0][0]

# %% md
## The comprehension check

# %% export
QUIZ = [('If the other side accepts your standing offer, is the deal at your price?', ['yes', 'no'], 'yes'),
        ('A buyer values the item at $100 and buys it at $80. What is the buyer\'s surplus?',
         ['$20', '$80', '$180'], '$20'),
        ('The clock reaches the deadline before anyone accepts. What happens?',
         ['no deal: surplus 0 for both', 'the item sells at the listing price'], 'no deal: surplus 0 for both')]

def grade(answers: list) -> list[int]:
    "The indexes of the questions answered wrongly."
    answers = list(answers) + [None] * len(QUIZ)
    return [i for i, (q, opts, right) in enumerate(QUIZ) if answers[i] != right]


# %%
test_eq(grade(['yes', '$20', 'no deal: surplus 0 for both']), [])
test_eq(grade(['no', '$20']), [0, 2])

# %% md
## What a person sees: the observation, as a view

The game page is drawn from a `View`: a participant's seat builds it from its own `Brief` and the observations the
engine hands it, exactly what an agent's conversation is built from, so it cannot hold the other side's number.

# %% export
_MINE = {'make_offer': 'offer', 'send_message': 'message', 'accept_offer': 'accept', 'reject_offer': 'reject',
         'quit_negotiation': 'quit'}
_TEXT = {'make_offer': 'note', 'send_message': 'text', 'reject_offer': 'reason'}

def error_text(res: dict) -> str:
    "A rejected call's error code as readable text, with the engine's message."
    code = res.get('error', '')
    return f"{ERROR_CODES.get(code, code)} ({code}): {res.get('message', '')}".strip()

def _event(who: str, a: dict) -> dict:
    "One public action for the history: who, when, what, and its price, offer and text."
    return {'who': who, 't': a.get('t'), 'action': a['action'], 'price': a.get('price'),
            'offer_id': a.get('offer_id'), 'text': a.get('text', '')}

# %%
error_text({'ok': False, 'error': 'stale_offer', 'message': 'S1 is no longer standing; their current offer is S2'})

# %% export
class View:
    "A participant's view of one game, built from what their seat observes and nothing else."
    def __init__(self, game_id: str, k: int, brief):
        b, it = brief, brief.item
        self.d = {'stage': 'game', 'game_id': game_id, 'k': k, 'role': b.role.value,
                  'item': {'title': it.title, 'category': it.category, 'description': it.description,
                           'listing': it.listing_price / 100},
                  'private': {'label': 'your value' if b.role is Role.BUYER else 'your cost',
                              'amount': b.reservation / 100},
                  'deadline': b.rules.deadline, 'now': 0.0, 'time_left': b.rules.deadline, 'your_offer': None,
                  'their_offer': None, 'history': [], 'errors': [], 'your_turn': False, 'over': None}

@patch
def observe(self: View, obs, sent: dict, at: float | None = None):
    "Take in an observation: the results of the calls `sent` at `at` (by call id) and the newest state report."
    d = self.d
    d['errors'] = []
    for r in obs.results:
        c, call = r.content or {}, sent.get(r.call_id)
        if c.get('ok') is False: d['errors'].append({'tool': r.name, 'text': error_text(c)})
        elif call is not None and r.name in _MINE:
            t = d['now'] if at is None else round(at, 2)
            a = {'action': _MINE[r.name], 't': t, 'price': c.get('price'), 'offer_id': c.get('offer_id')}
            d['history'].append(_event('you', {**a, 'text': call.arguments.get(_TEXT.get(r.name), '')}))
    if (st := obs.latest):
        d['history'] += [_event('them', a) for a in st.get('opponent_actions', [])]
        d.update(now=st['now'], time_left=st['time_left'], your_offer=st.get('your_offer'),
                 their_offer=st.get('their_offer'))


# %%
kettle = Item('kettle', 'Electric kettle', 'home-kitchen', 'A cordless kettle.', 3999, 2999, 4599)
eng = Engine(Scenario(kettle, 4500, 2500, 'low'), Rules(deadline=60), seed=1)
eng.next_turn()
v = View('L0000', 1, eng.brief(Role.BUYER))
eng.take(Role.BUYER)
sent = {'h1': ToolCall('make_offer', {'price': 30, 'note': '<b>fair?</b>'}, 'h1'),
        'h2': ToolCall('wait', {'seconds': -1}, 'h2')}
eng.submit(Role.BUYER, list(sent.values()))
v.observe(eng.take(Role.BUYER), sent)
test_eq(v.d['history'][0]['text'], '<b>fair?</b>')          # kept as text: the page only ever sets it as text
test_eq(v.d['private'], {'label': 'your value', 'amount': 45.0})
assert '25' not in json.dumps(v.d['private']) and 'seller_cost' not in json.dumps(v.d)
v.d['errors']

# %% md
## A person's seat

# %% export
class PersonSeat:
    "The seat of one participant in one game: hands the browser each observation and waits for an action."
    messages = None
    def info(self): return None
    def __init__(self, lab, code: str, game_id: str, k: int):
        self.lab, self.code, self.game_id, self.k = lab, code, game_id, k
        self.name = f'human:{code}'
        self.actions: asyncio.Queue = asyncio.Queue()
        self.sent, self.sent_at, self.n, self.view, self.clock = {}, None, 0, None, lambda: 0.0

    async def start(self, brief):
        self.brief, self.view = brief, View(self.game_id, self.k, brief)
        L = brief.item.listing_price
        self.limits = Limits(max_price=int(brief.rules.price_cap * L), max_text=brief.rules.max_message,
                             max_wait=brief.rules.deadline)
        self.push()

    def snapshot(self) -> dict:
        "The view as sent now: with the wall clock's reading, from which the page runs its clock on."
        return {**self.view.d, 'clock': round(min(self.clock(), self.view.d['deadline']), 2)}

    def push(self): self.lab.show(self.code, self.snapshot())

# %%
class _Shown:
    "A lab stand-in for the lesson: the session, what each participant was shown, and nobody away."
    def __init__(self, s): self.session, self.seen, self.seats = s, [], {}
    def show(self, code, st): self.seen.append((code, st))
    def away(self, code): return 0.0

lab = _Shown(Session((Treatment(1, 'buyer', 'conceder'),), deadline=3))
eng = Engine(Scenario(kettle, 4500, 2500, 'low'), Rules(deadline=60), seed=1)
seat = PersonSeat(lab, 'P01', 'L0000', 1)
run_sync(seat.start(eng.brief(Role.BUYER)))
test_eq((seat.name, lab.seen[-1][0]), ('human:P01', 'P01'))
lab.seen[-1][1]['private'], seat.limits.max_price

# %% export
@patch
def _calls(self: PersonSeat, msg: dict) -> list[ToolCall] | None:
    "The calls one browser action stands for: the tool, then a wait for the reply where asked and the call is valid."
    tool, args = msg.get('tool'), msg.get('args') or {}
    if tool not in TOOLS or not isinstance(args, dict): return None
    self.n += 1
    calls = [ToolCall(tool, args, f'h{self.n}')]
    if msg.get('then_wait') and not TOOLS[tool].ends_turn:
        try: check_call(tool, args, self.limits)
        except ToolError: return calls
        self.n += 1
        calls.append(ToolCall('wait_for_response', {}, f'h{self.n}'))
    return calls

# %%
names = lambda msg: [c.name for c in seat._calls(msg)]
test_eq(names({'tool': 'make_offer', 'args': {'price': 30}, 'then_wait': True}), ['make_offer', 'wait_for_response'])
test_eq(names({'tool': 'make_offer', 'args': {'price': 'thirty'}, 'then_wait': True}), ['make_offer'])  # its error
test_eq(seat._calls({'tool': 'fly', 'args': {}}), None)
names({'tool': 'accept_offer', 'args': {'offer_id': 'S1'}, 'then_wait': True})

# %% export
@patch
async def decide(self: PersonSeat, obs, clock, deadline: float) -> tuple[list, float]:
    "(calls, when): the person's next batch and the wall-clock second it came; a leave or the deadline decides too."
    self.view.observe(obs, self.sent, self.sent_at)
    self.view.d['your_turn'] = True
    while not self.actions.empty(): self.actions.get_nowait()     # nothing clicked before this turn counts
    self.push()
    while True:
        try: msg = await asyncio.wait_for(self.actions.get(), timeout=0.25)
        except asyncio.TimeoutError: msg = None
        now = clock()
        if now >= deadline: return [ToolCall('wait_for_response', {}, 'lab:deadline')], math.inf
        if msg is None:
            if self.lab.away(self.code) >= self.lab.session.leave_after:
                return [ToolCall('quit_negotiation', {}, 'lab:left')], now
            continue
        if (calls := self._calls(msg)):
            self.sent, self.sent_at = {c.id: c for c in calls}, now
            self.view.d['your_turn'] = False
            self.push()
            return calls, now

# %%
async def click(msg, after=0.05):
    await asyncio.sleep(after)
    seat.actions.put_nowait(msg)
async def turn(clock, msg=None):
    eng.next_turn()
    got, _ = await asyncio.gather(seat.decide(eng.take(Role.BUYER), clock, 60), click(msg))
    return got
calls, at = run_sync(turn(lambda: 4.2, {'tool': 'make_offer', 'args': {'price': 30}, 'then_wait': True}))
test_eq(([c.name for c in calls], at), (['make_offer', 'wait_for_response'], 4.2))
eng.submit(Role.BUYER, calls, at=at)
test_eq(eng.events[-1].t, 4.2)                      # the offer landed when the person clicked
calls, at

# %% export
@patch
async def finish(self: PersonSeat, obs):
    "The last observation: the outcome and this participant's surplus (shown once the game is stored)."
    self.view.observe(obs, self.sent, self.sent_at)
    if (o := (obs.latest or {}).get('game_over')) is None and (seen := self.view.d['over']):
        return round(seen['surplus'] * 100)                   # told already
    o = o or {}
    price = None if o.get('price') is None else round(o['price'] * 100)
    s = surplus(self.brief.role, self.brief.reservation, price if o.get('deal') else None)
    reason = EndReason(o.get('reason', 'agent_error'))
    self.view.d.update(your_turn=False, over={**o, 'surplus': s / 100, 'scored': reason.scored})
    return s

# %%
eng.next_turn()
eng.submit(Role.SELLER, [ToolCall('accept_offer', {'offer_id': 'B1'})])
test_eq(run_sync(seat.finish(eng.take(Role.BUYER))), 4500 - 3000)
seat.view.d['over']

# %% md
## The clock: a game on the wall clock

**How the clock is driven.** The engine keeps its own simulated clock: it hands the turn to a party at a simulated
time, and each call lands `latency` seconds later. The lab runs the same engine at wall-clock pace in two moves:

1. *Pacing*: before a party gets its turn at simulated time `t`, the driver sleeps until `t` wall seconds have passed
   since the game began. So a scripted agent's seeded latencies (0.5 to 2 s a call) and its `wait(seconds)` take that
   long in real time.
2. *Landing*: a batch is submitted with `at=` the wall-clock second it came (`Engine.submit`'s `at`): its first landed
   call lands at the later of its drawn latency and `at`. A person's thinking time and a model's real latency are thus
   part of the game, and the record keeps each call's time, from which `replay` reproduces the game exactly.

The engine gives one party the turn at a time: while a person holds the turn (thinking), the other side waits, and a
timer of theirs that falls due then fires when the person's action lands. When the deadline passes while a person holds
the turn, the driver ends their turn with a `wait_for_response` at `at=inf` (call id `lab:deadline`), which ends the game
by the engine's own rule: `deadline`, scored. A participant whose page has been closed for `leave_after` seconds (30 by
default) while it is their turn has left: the driver quits for them (`quit_negotiation`, call id `lab:left`): reason
`quit` by their role, scored as a game without a deal, as any quit is. A reload or a lost connection within that time
returns to the same game: the page reconnects and the server sends the seat's current view.

# %% export
async def play_live(lab, game_id: str, k: dict, scenario, seats: dict, seed: int):
    "Play one game at wall-clock pace: each turn, and the end, come when the wall clock reaches the engine's time."
    s = lab.session
    eng, failure = Engine(scenario, Rules(deadline=s.deadline), seed), {}
    agents = {r: (PersonSeat(lab, x[6:], game_id, k[r]) if x.startswith('human:') else make_agent(x))
              for r, x in seats.items()}
    for r, a in agents.items():
        if isinstance(a, PersonSeat): lab.seats[a.code] = a
    t0 = time.monotonic()
    clock = lambda: time.monotonic() - t0
    for a in agents.values():
        if isinstance(a, PersonSeat): a.clock = clock
    for r, a in agents.items():
        try: await a.start(eng.brief(r))
        except Exception as e: _failed(eng, r, e, failure)
    while (role := eng.next_turn()) is not None:
        if (ahead := eng.now - clock()) > 0: await asyncio.sleep(ahead)
        a = agents[role]
        try:
            if isinstance(a, PersonSeat): calls, at = await a.decide(eng.take(role), clock, s.deadline)
            else: calls, at = await a.act(eng.take(role)), clock()
        except Exception as e:
            _failed(eng, role, e, failure)
            break
        if eng.done: break
        eng.submit(role, calls, at=at)
    if eng.outcome and (ahead := eng.outcome.t - clock()) > 0 and not failure: await asyncio.sleep(ahead)
    return eng, agents, failure

# %%
async def person():
    "The buyer offers $30 as soon as it is their turn, then leaves the rest to the clock."
    while not ((seat := lab.seats.get('P01')) and seat.view and seat.view.d['your_turn']): await asyncio.sleep(0.01)
    await lab.seats['P01'].actions.put({'tool': 'make_offer', 'args': {'price': 30}, 'then_wait': True})
async def game():
    t0 = time.monotonic()
    (played, agents, failure), _ = await asyncio.gather(play_live(lab, 'L0000', {Role.BUYER: 1}, eng.scenario,
        {Role.BUYER: 'human:P01', Role.SELLER: 'conceder'}, seed=2), person())
    return played, time.monotonic() - t0
played, wall = run_sync(game())
assert played.outcome.t <= wall + 0.05      # the simulated clock never ran ahead of the wall clock
[(round(e.t, 2), e.role.value, e.kind, e.price) for e in played.events], played.outcome.reason, round(wall, 2)


# %% export
async def close_game(eng, agents, failure):
    "Let every seat see the end; the game's result and each person's surplus."
    gains = {}
    for r, a in agents.items():
        try:
            g = await a.finish(eng.take(r))
            if isinstance(a, PersonSeat): gains[a.code] = g
        except Exception: pass
    eng.unlink()
    names = {r.value: a.name for r, a in agents.items()}
    msgs = {r.value: a.messages for r, a in agents.items() if getattr(a, 'messages', None) is not None}
    info = {r.value: i for r, a in agents.items() if (i := getattr(a, 'info', lambda: None)()) is not None}
    return eng.result(names, msgs, info, failure), gains

# %%
agents = {Role.BUYER: seat, Role.SELLER: make_agent('conceder')}
r, gains = run_sync(close_game(eng, agents, {}))
test_eq((r.agents, gains), ({'buyer': 'human:P01', 'seller': 'conceder'}, {'P01': 1500}))
r.outcome

# %% md
## The lab: participants, matching, games

# %% export
def _gains(t: dict) -> tuple:
    "(buyer, seller) surplus in cents of a stored transcript."
    sc, o = t['scenario'], t['outcome']
    price = round(o['price'] * 100) if o.get('deal') else None
    return surplus(Role.BUYER, sc['buyer_value'], price), surplus(Role.SELLER, sc['seller_cost'], price)

# %%
test_eq(_gains(r.transcript), (1500, 500))          # a deal at $30: value $45, cost $25

# %% export
class Lab:
    "A session's live state: who is connected, who waits for a partner, the games in play; all of it in one loop."
    def __init__(self, d: str | Path, session: Session | None = None):
        self.dir = Path(d)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.con = create_session(self.dir, session) if session else open_lab(self.dir)
        self.session, self.store = load_session(self.con), Store(self.dir)
        self.seats, self.socks, self.gone, self.last, self.queue, self.tasks = {}, {}, {}, {}, [], set()

    def close(self):
        self.store.close()
        self.con.close()

# %%
d = Path(tempfile.mkdtemp())
lab = Lab(d, Session((Treatment(2, 'random', 'human'), Treatment(1, 'buyer', 'conceder')), games=1, deadline=3))
lab.session.treatments, lab.store.count()

# %% export
@patch
def _done(self: Lab, gid: str, t: dict):
    "Mark a stored game done in the lab's file, with its end and both surpluses."
    b, s = _gains(t)
    o = t['outcome']
    self.con.execute("UPDATE lab_games SET status='done', ended_at=?, reason=?, price=?, buyer_surplus=?, "
                     'seller_surplus=? WHERE game_id=?', (time.time(), o['reason'], o.get('price'), b, s, gid))

@patch
def resume(self: Lab) -> dict:
    "After a restart: a game the store holds is done; one it lacks was cut off: recorded as unplayed, never scored."
    out = {'done': 0, 'interrupted': 0}
    stored = self.store.done_ids()
    for gid, idx, b, s in self.con.execute("SELECT game_id, idx, buyer, seller FROM lab_games WHERE status='running'"
                                           ).fetchall():
        if gid in stored:
            self._done(gid, next(self.store.transcripts('game_id=?', (gid,)))[1])
            out['done'] += 1
            continue
        why = {'role': None, 'cause': 'server_restart', 'fatal': False,
               'message': 'the lab server stopped while the game was in play; the participants play another game'}
        self.store.add_failure(gid, b, s, idx, why)
        self.con.execute("UPDATE lab_games SET status='interrupted', reason='server_restart' WHERE game_id=?", (gid,))
        out['interrupted'] += 1
    return out

# %%
lab.con.execute("INSERT INTO lab_games(game_id, idx, buyer, seller, status, started_at) VALUES "
                "('L0099', 99, 'human:P03', 'conceder', 'running', 0)")
test_eq(lab.resume(), {'done': 0, 'interrupted': 1})    # as if the server had stopped during L0099
test_eq(lab.store.failures()['cause'].tolist(), ['server_restart'])
test_eq(lab.resume(), {'done': 0, 'interrupted': 0})

# %% export
@patch
def participant(self: Lab, code: str) -> dict:
    cur = self.con.execute('SELECT * FROM participants WHERE code=?', (code,))
    return dict(zip([c[0] for c in cur.description], cur.fetchone()))

@patch
def code_of(self: Lab, token: str) -> str | None:
    row = self.con.execute('SELECT code FROM participants WHERE token=?', (str(token),)).fetchone()
    return row and row[0]

@patch
def _set(self: Lab, code: str, **kw):
    cols = ', '.join(f'{k}=?' for k in kw)
    self.con.execute(f'UPDATE participants SET {cols} WHERE code=?', (*kw.values(), code))

# %%
test_eq(lab.code_of(links(lab.con, '')[0][1].split('/')[-1]), 'P01')
test_eq(lab.code_of('guess'), None)
{k: v for k, v in lab.participant('P03').items() if k != 'token'}

# %% export
@patch
def games_of(self: Lab, code: str) -> list[dict]:
    "A participant's games in the lab, in order: id, index, role, status, reason, surplus in cents."
    q = ('SELECT game_id, idx, buyer, seller, status, reason, price, buyer_surplus, seller_surplus FROM lab_games '
         'WHERE buyer=? OR seller=? ORDER BY idx')
    out, me = [], f'human:{code}'
    for gid, idx, b, s, st, reason, price, bs, ss in self.con.execute(q, (me, me)):
        role = 'buyer' if b == me else 'seller'
        out.append({'game_id': gid, 'idx': idx, 'role': role, 'opponent': s if role == 'buyer' else b,
                    'status': st, 'reason': reason, 'price': price, 'surplus': bs if role == 'buyer' else ss,
                    'scored': st == 'done' and EndReason(reason).scored})
    return out

# %%
lab.games_of('P03')

# %% export
@patch
def payoff_page(self: Lab, code: str) -> dict:
    "The payoff page: each scored game's surplus, the fee, the rate, and the payoff."
    s, games = self.session, [g for g in self.games_of(code) if g['scored']]
    return {'stage': 'payoff', 'fee': s.fee, 'rate': s.rate, 'payoff': payoff(s, [g['surplus'] for g in games]),
            'games': [{'k': i + 1, 'role': g['role'], 'reason': g['reason'], 'price': g['price'],
                       'surplus': g['surplus'] / 100} for i, g in enumerate(games)]}

# %%
test_eq(lab.payoff_page('P03')['payoff'], 5.0)          # the cut-off game is not scored: the fee alone

# %% export
@patch
def state(self: Lab, code: str) -> dict:
    "What participant `code` sees now."
    p, s = self.participant(code), self.session
    st = p['stage']
    if st == 'consent': return {'stage': 'consent', 'text': s.consent}
    if st == 'declined': return {'stage': 'declined'}
    if st == 'instructions':
        wrong = grade(json.loads(p['answers'])[-1]['answers']) if json.loads(p['answers']) else []
        return {'stage': 'instructions', 'text': s.instructions, 'deadline': s.deadline, 'games': s.games,
                'fee': s.fee, 'rate': s.rate, 'quiz': [{'q': q, 'options': o} for q, o, _ in QUIZ], 'wrong': wrong}
    if st == 'done': return self.payoff_page(code)
    if (seat := self.seats.get(code)) and seat.view: return seat.snapshot()
    return self.last.get(code) or {'stage': 'waiting'}

# %%
test_eq(lab.state('P01')['stage'], 'consent')
lab.state('P01')['text'][:60]

# %% export
@patch
def show(self: Lab, code: str, state: dict):
    "Remember `state` as what `code` sees, and send it to each of their open pages."
    self.last[code] = state
    text = json.dumps(state)
    for ws in list(self.socks.get(code, ())):
        t = asyncio.ensure_future(ws.send_text(text))
        t.add_done_callback(lambda f: f.exception())

@patch
def away(self: Lab, code: str) -> float:
    "Seconds since `code`'s last page closed (0 while one is open, or none was open since the server started)."
    if self.socks.get(code) or code not in self.gone: return 0.0
    return time.monotonic() - self.gone[code]

# %%
lab.show('P01', {'stage': 'consent', 'text': '...'})          # nobody's page is open: remembered only
test_eq((lab.last['P01']['text'], lab.away('P01')), ('...', 0.0))

# %% export
@patch
def connect(self: Lab, code: str, ws):
    self.socks.setdefault(code, set()).add(ws)
    self.gone.pop(code, None)
    p = self.participant(code)
    if p['stage'] == 'play' and code not in self.seats and code not in self.queue and code not in self.last:
        self.next_game(code)
    self.show(code, self.state(code))

@patch
def disconnect(self: Lab, code: str, ws):
    self.socks.get(code, set()).discard(ws)
    if not self.socks.get(code):
        self.gone[code] = time.monotonic()
        if code in self.queue:
            self.queue.remove(code)
            self.last.pop(code, None)

# %%
class _Page:
    "A page stand-in that keeps what the server sent it."
    def __init__(self): self.got = []
    async def send_text(self, t): self.got.append(json.loads(t))

async def visit(code, *msgs):
    "Open `code`'s page, send `msgs`, close it: what the page was shown."
    pg = _Page()
    lab.connect(code, pg)
    for m in msgs: lab.handle(code, m)
    await asyncio.sleep(0.01)
    lab.disconnect(code, pg)
    return [x['stage'] for x in pg.got]
test_eq((await visit('P03')), ['consent'])
assert lab.away('P03') >= 0

# %% export
@patch
def handle(self: Lab, code: str, msg: dict):
    "One message from a participant's page: consent, the check's answers, a game action, or 'next game'."
    p, kind = self.participant(code), msg.get('type') if isinstance(msg, dict) else None
    if kind == 'consent' and p['stage'] == 'consent':
        if msg.get('agree') is True: self._set(code, stage='instructions', consent_at=time.time())
        else: self._set(code, stage='declined', declined_at=time.time())
    elif kind == 'quiz' and p['stage'] == 'instructions':
        answers = [a if isinstance(a, str) else None for a in (msg.get('answers') or [])][:len(QUIZ)]
        tries = json.loads(p['answers']) + [{'t': time.time(), 'answers': answers}]
        self._set(code, answers=json.dumps(tries))
        if not grade(answers):
            self._set(code, stage='play', passed_at=time.time())
            return self.next_game(code)
    elif kind == 'act' and (seat := self.seats.get(code)) and seat.view.d['your_turn'] and seat.actions.empty():
        return seat.actions.put_nowait(msg)
    elif kind == 'next' and p['stage'] == 'play' and code not in self.seats and code not in self.queue:
        return self.next_game(code)
    else: return
    self.show(code, self.state(code))

# %%
test_eq((await visit('P03', {'type': 'consent', 'agree': True}, {'type': 'quiz', 'answers': ['no']})),
        ['consent', 'instructions', 'instructions'])
test_eq(lab.state('P03')['wrong'], [0, 1, 2])
test_eq((await visit('P02', {'type': 'consent', 'agree': False}, {'type': 'consent', 'agree': True})),
        ['consent', 'declined'])                            # declining ends it; nothing after counts
lab.participant('P02')['declined_at'] is not None

# %% md
## Matching and the next game

**Matching.** A participant against an agent starts their next game as soon as they are ready. A participant of a
`human` treatment joins a queue ("we are matching you with another participant"); the first two ready participants of
the same treatment play each other, in roles drawn from the session's seed and the game's index, so over a session
each person is buyer about as often as seller. Closing the page while waiting leaves the queue. Every game gets the
next index of the session: its id (`L0007`), its scenario (scenario `i` of the preset under the session's seed, as a
tournament draws them) and its engine seed.

# %% export
@patch
async def run_game(self: Lab, gid: str, idx: int, k: dict, scenario, seats: dict):
    "Play one game live, then store it (or, if it could not be played, record why) before anyone sees the end."
    eng, agents, failure = await play_live(self, gid, k, scenario, seats, derive_seed(self.session.seed, 'game', idx))
    r, gains = await close_game(eng, agents, failure)
    b, s = seats[Role.BUYER], seats[Role.SELLER]
    if r.outcome.reason.scored: self.store.add(gid, b, s, idx, game_row(r), r.transcript, r.messages)
    else:
        f = r.failure or {'cause': 'agent_error', 'message': 'the game ended with agent_error', 'fatal': False}
        self.store.add_failure(gid, b, s, idx, f, r.transcript)
    self._done(gid, r.transcript)
    for a in agents.values():
        if isinstance(a, PersonSeat):
            self.seats.pop(a.code, None)
            a.push()

# %%
sc = sample_scenarios(1, seed=5)[0]
(await lab.run_game('L0098', 98, {}, sc, {Role.BUYER: 'boulware', Role.SELLER: 'conceder'}))
test_eq(lab.store.done_ids(), {'L0098'})
next(lab.store.transcripts())[1]['outcome']

# %% export
@patch
def _next_idx(self: Lab) -> int:
    return self.con.execute('SELECT COALESCE(MAX(idx) + 1, 0) FROM lab_games').fetchone()[0]

@patch
def start_game(self: Lab, seats: dict):
    "Start one game between `seats` (role -> 'human:CODE' or an agent spec) as a task of the server's loop."
    s, idx = self.session, self._next_idx()
    gid = f'L{idx:04d}'
    k = {r: len(self.games_of(x[6:])) + 1 for r, x in seats.items() if x.startswith('human:')}
    self.con.execute("INSERT INTO lab_games(game_id, idx, buyer, seller, status, started_at) VALUES (?,?,?,?,?,?)",
                     (gid, idx, seats[Role.BUYER], seats[Role.SELLER], 'running', time.time()))
    sc = sample_scenarios(idx + 1, s.preset, s.seed)[idx]
    task = asyncio.ensure_future(self.run_game(gid, idx, k, sc, seats))
    self.tasks.add(task)
    task.add_done_callback(self.tasks.discard)


# %%
async def two():
    lab.start_game({Role.BUYER: 'conceder', Role.SELLER: 'boulware'})
    await asyncio.gather(*lab.tasks)
await two()
test_eq(lab.con.execute("SELECT game_id, status FROM lab_games WHERE idx=100").fetchall(), [('L0100', 'done')])

# %% export
@patch
def next_game(self: Lab, code: str):
    "Start `code`'s next game, queue them for a partner, or show the payoff page when their games are played."
    s, p, games = self.session, self.participant(code), self.games_of(code)
    if sum(g['scored'] for g in games) >= s.games or len(games) >= 2 * s.games + 2:
        pay = payoff(s, [g['surplus'] for g in games if g['scored']])
        self._set(code, stage='done', finished_at=time.time(), payoff=pay)
        self.last.pop(code, None)
        return self.show(code, self.state(code))
    if p['opponent'] != HUMAN:
        return self.start_game({Role(p['role']): f'human:{code}', Role(p['role']).other: p['opponent']})
    self.queue.append(code)
    self.show(code, {'stage': 'waiting', 'why': 'we are matching you with another participant'})
    mine = [c for c in self.queue if self.participant(c)['treatment'] == p['treatment']]
    if len(mine) >= 2:
        a, b = mine[:2]
        for c in (a, b): self.queue.remove(c)
        idx = self._next_idx()
        first = ('buyer', 'seller')[derive_seed(s.seed, 'pair', idx) % 2]
        self.start_game({Role(first): f'human:{a}', Role(first).other: f'human:{b}'})

# %%
async def matching(d):
    lab = Lab(d, Session((Treatment(2, 'random', 'human'), Treatment(1, 'buyer', 'boulware')), deadline=5))
    pages = {c: _Page() for c in ('P01', 'P02', 'P03')}
    for c, pg in pages.items():
        lab.connect(c, pg)
        lab.handle(c, {'type': 'consent', 'agree': True})
        lab.handle(c, {'type': 'quiz', 'answers': [q[2] for q in QUIZ]})
        await asyncio.sleep(0.05)
        if c == 'P01': test_eq(pages['P01'].got[-1]['stage'], 'waiting')
    for t in list(lab.tasks): t.cancel()      # the lesson stops here; a server restart would record them cut off
    await asyncio.sleep(0.05)
    games = lab.con.execute('SELECT game_id, buyer, seller, status FROM lab_games').fetchall()
    lab.close()
    return games, pages
d = Path(tempfile.mkdtemp())
games, pages = await matching(d)
test_eq(sorted(g[1:3] in [('human:P01', 'human:P02'), ('human:P02', 'human:P01'), ('human:P03', 'boulware')]
               for g in games), [True, True])
test_eq(pages['P02'].got[-1]['stage'], 'game')
games


# %% md
## The server

# %% export
def asset(name: str) -> str:
    "A file shipped in the package (the page's script and styles; sources in `nbs/assets/`)."
    from importlib import resources
    return (resources.files('bilateral') / name).read_text()

def page() -> str:
    "The participant's page: one HTML file whose script draws every screen from the server's messages."
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bargaining study</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<style>{asset("lab.css")}</style></head><body><main id="app" data-stage="loading">'
            f'<p>Connecting...</p></main><script>{asset("lab.js")}</script></body></html>')

# %%
assert 'innerHTML' not in asset('lab.js')       # the page sets every text as text
len(page())

# %% export
def admin_html(lab: Lab, base: str) -> str:
    "The admin page: the session's settings and each participant's stage, games, payoff and link (all escaped)."
    s, e = lab.session, html.escape
    rows = []
    for code, link in links(lab.con, base):
        p, g = lab.participant(code), lab.games_of(code)
        pay = '' if p['payoff'] is None else f"{p['payoff']:.2f}"
        rows.append(f"<tr><td>{e(code)}</td><td>{p['treatment']}</td><td>{e(p['role'])}</td><td>{e(p['opponent'])}"
                    f"</td><td>{e(p['stage'])}</td><td>{sum(x['scored'] for x in g)}</td><td>{pay}</td>"
                    f'<td><a href="{e(link)}">{e(link)}</a></td></tr>')
    head = ''.join(f'<th>{h}</th>' for h in ('code', 'treatment', 'role', 'opponent', 'stage', 'games', 'payoff',
                                              'link'))
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>Lab admin</title></head><body>'
            f'<h1>Lab session</h1><p>{e(json.dumps(session_json(s))[:2000])}</p>'
            f'<table border="1"><tr>{head}</tr>{"".join(rows)}</table></body></html>')

# %%
assert '<td>P03</td>' in admin_html(lab, 'http://127.0.0.1:8000') and '<script' not in admin_html(lab, '')

# %% export
def make_app(lab: Lab, base: str = ''):
    "The Starlette app: participant pages and their WebSockets, the admin page behind its token."
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route, WebSocketRoute
    token = admin_token(lab.con)

    async def participant(request):
        if lab.code_of(request.path_params['token']) is None: return PlainTextResponse('no such link', 404)
        return HTMLResponse(page(), headers={'Cache-Control': 'no-store'})

    async def admin(request):
        if not secrets.compare_digest(request.query_params.get('token', ''), token):
            return PlainTextResponse('the admin page needs its token: /admin?token=...', 403)
        return HTMLResponse(admin_html(lab, base or str(request.base_url).rstrip('/')))

    async def socket(ws):
        code = lab.code_of(ws.path_params['token'])
        if code is None: return await ws.close(code=4404)
        await ws.accept()
        lab.connect(code, ws)
        try:
            while True: lab.handle(code, json.loads(await ws.receive_text()))
        except Exception: pass
        finally: lab.disconnect(code, ws)

    routes = [Route('/p/{token}', participant), Route('/admin', admin), WebSocketRoute('/ws/{token}', socket)]
    return Starlette(routes=routes)


# %%
from starlette.testclient import TestClient
lab = Lab(d)
test_eq(lab.resume(), {'done': 0, 'interrupted': 2})          # the two games the lesson stopped: recorded, not scored
with TestClient(make_app(lab)) as client:
    test_eq(client.get('/admin').status_code, 403)
    test_eq(client.get('/admin', params={'token': 'guess'}).status_code, 403)
    test_eq(client.get('/admin', params={'token': admin_token(lab.con)}).status_code, 200)
    test_eq(client.get('/p/not-a-link').status_code, 404)
    (code, link), = [x for x in links(lab.con, '') if x[0] == 'P03']
    test_eq(client.get(link).status_code, 200)
    with client.websocket_connect(link.replace('/p/', '/ws/')) as ws: shown = ws.receive_json()
lab.close()
shown['stage'], shown.get('why')

# %% export
def serve(d: str | Path, session: Session | None = None, host: str = '127.0.0.1', port: int = 8000,
          out=print) -> None:
    "Run a session's server until Ctrl-C: create or resume it in `d`, print the admin link and one link each."
    import uvicorn
    lab = Lab(d, session)
    base, r = f'http://{host}:{port}', lab.resume()
    if r['done'] or r['interrupted']:
        out(f"resumed: {r['done']} game(s) found stored, {r['interrupted']} cut off by the restart (not scored)")
    out(f'admin: {base}/admin?token={admin_token(lab.con)}')
    for code, link in links(lab.con, base): out(f'{code}: {link}')
    try: uvicorn.run(make_app(lab, base), host=host, port=port, log_level='warning', ws='auto',
                    timeout_graceful_shutdown=5)
    finally: lab.close()

# %%
import inspect
inspect.signature(serve).parameters['host'].default          # loopback unless told otherwise

# %% md
## Export: one row per participant and game

oTree's wide export writes one row per participant with columns named `participant.*`, `session.*` and, per app and
round, `player.*`, `group.*`, `subsession.*`. The lab writes one row per participant and game, with those names:
`subsession.round_number` is the participant's game number, `group.*` the game, `player.*` the participant in it.

# %% export
EXPORT_COLUMNS = ['session.code', 'session.config.participation_fee', 'session.config.real_world_currency_per_point',
                  'participant.code', 'participant.treatment', 'participant.role', 'participant.opponent',
                  'participant.stage', 'participant.consent_at', 'participant.declined_at',
                  'participant.comprehension_tries', 'participant.comprehension_answers', 'participant.passed_at',
                  'participant.finished_at', 'participant.payoff', 'subsession.round_number', 'group.game_id',
                  'group.status', 'group.end_reason', 'group.deal', 'group.price', 'player.role', 'player.agent',
                  'player.opponent', 'player.private_value', 'player.surplus', 'player.scored']

# %%
len(EXPORT_COLUMNS)

def _participant_columns(p: dict, s: Session, session: str) -> dict:
    "The session's and the participant's columns of an export row."
    tries = json.loads(p['answers'])
    return {'session.code': session, 'session.config.participation_fee': s.fee,
            'session.config.real_world_currency_per_point': s.rate, 'participant.code': p['code'],
            **{f'participant.{k}': p[k] for k in ('treatment', 'role', 'opponent', 'stage', 'consent_at',
                                                  'declined_at', 'passed_at', 'finished_at', 'payoff')},
            'participant.comprehension_tries': len(tries),
            'participant.comprehension_answers': json.dumps([t['answers'] for t in tries])}

def _game_columns(n: int, g: dict, code: str, sc: dict) -> dict:
    "The columns of a participant's `n`-th game (`sc`: its stored scenario, {} for a game that was cut off)."
    priv = sc.get('buyer_value' if g['role'] == 'buyer' else 'seller_cost')
    return {'subsession.round_number': n, 'group.game_id': g['game_id'], 'group.status': g['status'],
            'group.end_reason': g['reason'], 'group.deal': g['reason'] == 'deal', 'group.price': g['price'],
            'player.role': g['role'], 'player.agent': f'human:{code}', 'player.opponent': g['opponent'],
            'player.private_value': None if priv is None else priv / 100,
            'player.surplus': None if g['surplus'] is None else g['surplus'] / 100, 'player.scored': g['scored']}

# %%
lab = Lab(d)
test_eq(_participant_columns(lab.participant('P01'), lab.session, 'demo')['participant.comprehension_tries'], 1)
_game_columns(1, lab.games_of('P03')[0], 'P03', {})

# %% export
def export_rows(d: str | Path) -> list[dict]:
    "The rows of `bilateral lab export`: each participant's games (a participant without games: one row)."
    lab = Lab(d)
    with Store(d, create=False) as st: scen = {g: t['scenario'] for g, t in st.transcripts()}
    out = []
    for (code,) in lab.con.execute('SELECT code FROM participants ORDER BY code').fetchall():
        base = _participant_columns(lab.participant(code), lab.session, Path(d).resolve().name)
        games = lab.games_of(code)
        out += [{**base, **_game_columns(n, g, code, scen.get(g['game_id'], {}))} for n, g in enumerate(games, 1)]
        if not games: out.append(base)
    lab.close()
    return out

def export_csv(d: str | Path, out: str | Path | None = None) -> Path:
    "Write the export as CSV (default: DIR/lab_export.csv)."
    out = Path(out) if out else Path(d) / 'lab_export.csv'
    with open(out, 'w', newline='') as f:
        w = csv.DictWriter(f, EXPORT_COLUMNS)
        w.writeheader()
        w.writerows(export_rows(d))
    return out


# %%
rows = export_rows(d)
test_eq([r['participant.code'] for r in rows], ['P01', 'P02', 'P03', 'P03'])   # P03 came back: a new game
test_eq([r['group.status'] for r in rows][:3], ['interrupted'] * 3)
{k: rows[0][k] for k in ('participant.code', 'participant.stage', 'group.game_id', 'player.role', 'player.scored')}

# %% md
## The command line

# %% export
def _session(a) -> Session | None:
    "The session the flags define; None when none is given (resume the one in the directory)."
    if not a.treatment: return None
    read = lambda p, default: Path(p).read_text() if p else default
    return Session(tuple(parse_treatment(t) for t in a.treatment), a.preset, a.games, a.deadline, a.fee, a.rate,
                   read(a.consent, CONSENT), read(a.instructions, INSTRUCTIONS), a.seed, a.leave_after)

def cmd_lab(a) -> str:
    "`bilateral lab run|export`."
    if not (Path(a.dir) / LAB_FILE).exists() and (a.action == 'export' or not a.treatment):
        raise ConfigError(f'no lab session in {a.dir}: define one with `bilateral lab run DIR --treatment ...`')
    if a.action == 'export': return f'wrote {export_csv(a.dir, a.out)}'
    serve(a.dir, _session(a), a.host, a.port, out=lambda x: print(x, flush=True))
    return ''

# %%
test_eq(_session(argparse.Namespace(treatment=[])), None)      # no treatment given: resume the one in the directory
test_fail(lambda: cmd_lab(argparse.Namespace(action='run', dir=tempfile.mkdtemp(), treatment=[])),
          contains='no lab session')

# %% export
def add_lab(sub, parser_class=argparse.ArgumentParser):
    "The `lab` subcommand (its server needs the extra `lab`)."
    lab = sub.add_parser('lab', help='a browser lab: sessions of human participants (extra: lab)')
    acts = lab.add_subparsers(dest='action', required=True, parser_class=parser_class)
    r = acts.add_parser('run', help='define a session (or resume the one in DIR) and serve it until Ctrl-C')
    r.add_argument('dir', help='the session directory: games.sqlite, lab.sqlite')
    r.add_argument('--treatment', action='append', default=[], metavar='N:ROLE:OPPONENT',
                   help='N participants in ROLE (buyer, seller, random) against OPPONENT (an agent spec or human)')
    r.add_argument('--preset', default=DEFAULT_PRESET)
    r.add_argument('--games', type=int, default=Session.games, help='scored games per participant')
    r.add_argument('--deadline', type=float, default=Session.deadline, help='seconds per game (wall clock)')
    r.add_argument('--fee', type=float, default=Session.fee, help='show-up fee')
    r.add_argument('--rate', type=float, default=Session.rate, help='money per dollar of surplus')
    r.add_argument('--consent', default=None, help='a text file with the consent text')
    r.add_argument('--instructions', default=None, help='a text file with the instructions')
    r.add_argument('--seed', type=int, default=0)
    r.add_argument('--leave-after', type=float, default=Session.leave_after,
                   help='seconds away on their turn after which a participant has left (their quit)')
    r.add_argument('--host', default='127.0.0.1')
    r.add_argument('--port', type=int, default=8000)
    e = acts.add_parser('export', help='one CSV row per participant and game (oTree-style column names)')
    e.add_argument('dir')
    e.add_argument('--out', default=None)
    lab.set_defaults(fn=cmd_lab)

# %%
cli = argparse.ArgumentParser()
add_lab(cli.add_subparsers(dest='cmd'))
a = cli.parse_args(['lab', 'run', str(d), '--treatment', '2:random:human', '--deadline', '90', '--fee', '8'])
test_eq((_session(a).deadline, a.host), (90, '127.0.0.1'))
cmd_lab(cli.parse_args(['lab', 'export', str(d), '--out', str(d / 'x.csv')])).startswith('wrote')
