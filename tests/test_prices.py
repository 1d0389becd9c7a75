"""A price is written one way wherever a model reads it: in narrated games, every money value in a tool result, an
update, the opening and a teacher's make_offer has exactly two decimals, and reads back as the engine's number; each
state restates the party's own value or cost, never the other's."""
import json, re
import pytest
from bilateral.chat import OWN_KEYS
from bilateral.core import Role
from bilateral.play import play
from bilateral.scenarios import sample_scenarios

TIMES = {'now', 'time_left', 't', 'seconds'}   # the numbers that are not money
MONEY = {'price', *OWN_KEYS.values()}
TWO_DECIMALS = re.compile(r'-?\d+\.\d\d')
GAMES = [('narrated:boulware', 'narrated:linear', 'symmetric', 5),
         ('narrated:hardliner', 'narrated:accommodating', 'mixed', 8),
         ('narrated:haggler', 'narrated:tit-for-tat', 'symmetric', 9),
         ('narrated:split', 'narrated:conceder', 'no-zopa', 11)]


class Written(float):
    "A JSON number that remembers how it was written."


def _written(text):
    x = Written(text)
    x.text = text
    return x


def prices(x, key=None, money=('price',)) -> list:
    "The values under the `money` keys of parsed JSON in order; every other number must be a time."
    if isinstance(x, dict): return [p for k, v in x.items() for p in prices(v, k, money)]
    if isinstance(x, list): return [p for v in x for p in prices(v, None, money)]
    if key in MONEY: return [] if x is None or key not in money else [x]
    assert isinstance(x, bool) or not isinstance(x, (int, float)) or key in TIMES, f'a number under {key!r}: money?'
    return []


def check(text: str, engine, own: tuple = ('your_value', None)) -> list:
    "The prices in `text`: each with two decimals, reading back as `engine` holds them, and `own` = (key, value)."
    written = prices(json.loads(text, parse_float=_written, parse_int=_written), money=MONEY)
    bad = [getattr(p, 'text', p) for p in written if not (isinstance(p, Written) and TWO_DECIMALS.fullmatch(p.text))]
    assert not bad, f'prices not written with two decimals: {bad} in {text}'
    assert prices(json.loads(text)) == prices(engine), text
    key, value = own
    other = ({*OWN_KEYS.values()} - {key}).pop()
    assert prices(json.loads(text), money=(other,)) == [], f'the other party\'s number {other!r} in {text}'
    mine = prices(json.loads(text), money=(key,))
    assert mine == ([value] if 'your_offer' in engine else []), text   # every state restates it, nothing else
    return written


def conversation_prices(g, role) -> list:
    "Check one side's conversation against the engine's log; return every price it wrote."
    log = [e for e in g.transcript['log'] if e.get('role') == role.value]
    results = {e['id']: e for e in log if 'id' in e}
    updates = [e['update'] for e in log if 'update' in e]
    msgs, seen = g.messages[role.value], []
    sc = g.transcript['scenario']
    own = (OWN_KEYS[role.value], (sc['buyer_value'] if role is Role.BUYER else sc['seller_cost']) / 100)
    for m in msgs[:2]:
        assert all(re.fullmatch(r'\$\d+\.\d\d', a) for a in re.findall(r'\$[\d.,]*\d', m['content'])), m['content']
    seen += check(msgs[1]['content'].split('Current state: ', 1)[1], updates[0], own)
    later = [m['content'] for m in msgs[2:] if m['role'] == 'user']
    assert len(later) == len(updates) - 1
    seen += [p for text, u in zip(later, updates[1:]) for p in check(text, u, own)]
    for m in msgs[2:]:
        if m['role'] == 'tool':
            seen += check(m['content'], results.get(m['tool_call_id'], {}).get('result', {}), own)
        for c in m.get('tool_calls', []):
            if c['function']['name'] != 'make_offer': continue
            args, done = c['function']['arguments'], results.get(c['id'], {})   # a call after the end is not logged
            assert done.get('arguments', args) == args
            landed = done.get('result', {}).get('ok')
            seen += check(args, {'price': done['result']['price']} if landed else json.loads(args))
    return seen


@pytest.mark.parametrize('buyer,seller,preset,seed', GAMES)
def test_every_price_a_model_reads_or_a_teacher_writes_has_two_decimals(buyer, seller, preset, seed):
    g = play(sample_scenarios(1, preset, seed)[0], buyer, seller, seed=seed)
    seen = conversation_prices(g, Role.BUYER) + conversation_prices(g, Role.SELLER)
    assert len(seen) > 10
    assert any(p.text != repr(float(p)) for p in seen), 'no price here would be written differently by json.dumps'


def test_the_games_cover_deals_and_no_deals():
    "The games above reach a deal (accept and game-over prices) and end without one (a null price)."
    deals = {play(sample_scenarios(1, p, s)[0], b, se, seed=s).outcome.deal for b, se, p, s in GAMES}
    assert deals == {True, False}
