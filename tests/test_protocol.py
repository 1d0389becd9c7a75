"Every error code is reachable through the engine, and a rejected call never changes the game."
import json, random
import pytest
from bilateral.core import *
from bilateral.protocol import ERROR_CODES, TOOLS, ToolError, validate_call, openai_tools, Limits
from bilateral.engine import *
from bilateral.protocol import *
from conftest import drive

ITEM = Item('lamp', 'Desk lamp', 'home', 'An LED desk lamp.', 5000, 4000, 6000)
SC = Scenario(ITEM, 4500, 2000, 'mid')
B, S = Role.BUYER, Role.SELLER

def setup():
    "Buyer offered B1 (then B2, superseding it); the seller offered S1 then S2; it is the buyer's turn."
    script = [(role, [('make_offer', {'price': price}), ('wait_for_response', {})])
              for role, price in [(B, 20), (S, 48), (B, 22), (S, 46)]]
    eng = drive(Engine(SC, Rules(max_invalid=1000)), script)
    assert eng.next_turn() is B
    eng.take(B)
    return eng

BAD = {
    'invalid_json': [('make_offer', '{"price": 30')],
    'arguments_not_object': [('make_offer', '[30]'), ('make_offer', '"30"')],
    'unknown_tool': [('buy_now', '{}'), ('', '{}')],
    'missing_field': [('make_offer', '{}'), ('accept_offer', '{}')],
    'wrong_type': [('make_offer', '{"price": true}'), ('make_offer', '{"price": "1,500"}'),
                   ('make_offer', '{"price": "$12"}'), ('make_offer', '{"price": "12"}'),
                   ('make_offer', '{"price": null}'), ('send_message', '{"text": ["a"]}')],
    'not_finite': [('make_offer', '{"price": NaN}'), ('make_offer', '{"price": Infinity}'),
                   ('make_offer', '{"price": -Infinity}'), ('make_offer', '{"price": 1e400}')],
    'out_of_range': [('make_offer', '{"price": 0}'), ('make_offer', '{"price": -1}'),
                     ('make_offer', '{"price": 5000.01}'), ('wait', '{"seconds": 0}')],
    'unexpected_field': [('make_offer', '{"price": 30, "qty": 2}')],
    'duplicate_key': [('make_offer', '{"price": 30, "price": 31}')],
    'too_long': [('send_message', json.dumps({'text': 'x' * 2001})),
                 ('make_offer', json.dumps({'price': 30, 'note': 'y' * 5000}))],
    'unknown_offer': [('accept_offer', '{"offer_id": "S9"}')],
    'stale_offer': [('accept_offer', '{"offer_id": "S1"}'), ('reject_offer', '{"offer_id": "S1"}')],
    'illegal_in_state': [('accept_offer', '{"offer_id": "B2"}')],
}

@pytest.mark.parametrize('code,calls', BAD.items())
def test_rejected_calls_change_nothing(code, calls):
    eng = setup()
    for name, raw in calls:
        before, n_log = eng.state(), len(eng.log)
        eng.submit(B, [ToolCall(name, raw, 'x')])
        res = eng.take(B).results[0].content
        assert res['ok'] is False and res['error'] == code and res['message'], (name, raw, res)
        assert eng.state() == before
        assert len(eng.log) == n_log + 1 and eng.log[-1]['result'] == res

def test_one_action_per_turn_and_after_turn_end():
    eng = setup()
    eng.submit(B, [ToolCall('make_offer', {'price': 23}), ToolCall('make_offer', {'price': 24})])
    assert [r.content.get('error') for r in eng.take(B).results] == [None, 'one_action_per_turn']
    eng.submit(B, [ToolCall('wait_for_response'), ToolCall('send_message', {'text': 'late'})])
    assert eng.next_turn() is S
    assert [a['action'] for a in eng.take(S).latest['opponent_actions']] == ['offer']
    eng.submit(S, [ToolCall('make_offer', {'price': 45}), ToolCall('wait_for_response')])
    assert eng.next_turn() is B
    assert [r.content.get('error') for r in eng.take(B).results] == [None, 'one_action_per_turn']

def test_game_over_code():
    eng = setup()
    eng.submit(B, [ToolCall('accept_offer', {'offer_id': 'S2'}), ToolCall('send_message', {'text': 'thanks'})])
    assert eng.take(B).results[1].content['error'] == 'game_over'

def test_no_tool_call_code():
    eng = setup()
    eng.submit(B, [])
    assert eng.take(B).update['error'] == 'no_tool_call'

def test_every_code_is_exercised():
    exercised = set(BAD) | {'one_action_per_turn', 'game_over', 'no_tool_call'}
    assert exercised == set(ERROR_CODES)

def test_prices_round_to_the_cent():
    assert validate_call('make_offer', '{"price": 19.999}', Limits())['price'] == 2000
    assert validate_call('make_offer', '{"price": 7}', Limits())['price'] == 700

def test_fuzzed_argument_strings_never_crash():
    """Random mutations of valid argument strings give a clean result or a rejection that says what is wrong, never
    another exception. (`ToolError` itself checks that its code is one of `ERROR_CODES`.)"""
    rng = random.Random(0)
    limits = Limits(max_price=10**6)
    seeds = ['{"price": 30}', '{"offer_id": "S1"}', '{"text": "hi"}', '{"seconds": 5}', '{}']
    alphabet = '{}[]":,0123456789.eE+-NaInfinitytruefalsnul \\x'
    for _ in range(20000):
        s = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(s) + 1)
            op = rng.random()
            if op < 0.4: s.insert(i, rng.choice(alphabet))
            elif op < 0.7 and s: del s[min(i, len(s) - 1)]
            elif s: s[min(i, len(s) - 1)] = rng.choice(alphabet)
        name = rng.choice(['make_offer', 'accept_offer', 'send_message', 'wait', 'wait_for_response'])
        try: out = validate_call(name, ''.join(s), limits)
        except ToolError as e:
            assert e.code in ERROR_CODES and e.message, e.code    # a stable code, and the model is told what was wrong
            continue
        assert set(out) <= set(TOOLS[name].fields), (name, s, out)   # only the tool's own arguments, cleaned
        assert 0 < out.get('price', 1) <= limits.max_price, (s, out)    # a price in cents within the limit

def test_schemas_are_valid_openai_tools():
    tools = openai_tools()
    for t in tools:
        f = t['function']
        assert t['type'] == 'function' and f['description'] and f['parameters']['type'] == 'object'
        assert set(f['parameters'].get('required', [])) <= set(f['parameters']['properties'])
    json.dumps(tools, allow_nan=False)
