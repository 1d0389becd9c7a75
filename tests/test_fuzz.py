"""Property-based fuzzing of the validator and the engine with hostile values: every call gets a valid result or a
stable error code, a rejected call leaves the game unchanged, every transcript saves as strict JSON and replays exactly.

`make test` runs a bounded number of examples; BILATERAL_FUZZ_EXAMPLES raises it (the closing note's 100,000-call
run)."""
import json, math, os
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from bilateral.core import Item, Scenario
from bilateral.protocol import TOOLS, ToolError, validate_call
from bilateral.engine import Engine, replay
from bilateral.protocol import Rules, ToolCall
from bilateral.core import dumps

EXAMPLES = int(os.environ.get('BILATERAL_FUZZ_EXAMPLES', '500'))   # about 12 s; 150 already finds unsorted keys
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**500),
                    st.floats(), st.text(max_size=12), st.binary(max_size=4),
                    st.sampled_from([1e400, -0.0, 5e-324, 1e15]))
values = st.recursive(scalars, lambda ch: st.lists(ch, max_size=3) | st.tuples(ch) |
                      st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), ch, max_size=3), max_leaves=6)
fields = st.sampled_from(['price', 'note', 'offer_id', 'reason', 'text', 'seconds', 'extra'])
arg_dicts = st.dictionaries(st.one_of(fields, st.integers(), st.none(), st.booleans()), values, max_size=3)

@st.composite
def json_texts(draw):
    "JSON text a model might send: well formed, NaN tokens, huge numbers, truncated, duplicated keys, or noise."
    d = draw(st.dictionaries(fields, st.one_of(st.floats(), st.integers(), st.text(max_size=12), st.none()),
                             max_size=3))
    text = json.dumps(d, allow_nan=True)
    return draw(st.sampled_from([text, text[:-1], text + '}', '{"price": 1' + '0' * 400 + '}', '{"price": 1e400}',
                                 '{"price": 1, "price": 2}', '[1, 2]', '', ' ', 'null',
                                 '{"text": "' + 'x' * 20000 + '"}', '{' * 5000 + '}' * 5000,
                                 draw(st.text(max_size=20))]))

names = st.one_of(st.sampled_from(list(TOOLS)), st.text(max_size=10), st.none(), st.integers(), st.binary(max_size=3))
# objects whose keys are not in sorted order, where an error message may quote them: a record stores them sorted, so an
# error text built from the caller's order would not replay (issue 20: `{"price": {"0": null, "": null}}`)
unsorted = st.lists(st.one_of(st.text(max_size=4), fields), min_size=2, max_size=3, unique=True).map(
    lambda ks: dict.fromkeys(sorted(ks, reverse=True)))
raws = st.one_of(arg_dicts, json_texts(), values, unsorted, st.builds(lambda f, d: {f: d}, fields, unsorted))

@FUZZ
@given(names, raws)
def test_validator_is_total(name, raw):
    try: out = validate_call(name, raw)
    except ToolError as e:
        assert json.loads(dumps(e.result()))['error'] == e.code     # the agent's answer saves as strict JSON
        return
    assert name in TOOLS and set(out) <= set(TOOLS[name].fields)
    assert all(math.isfinite(v) for v in out.values() if isinstance(v, (int, float)))

SC = Scenario(Item('lamp', 'Desk lamp', 'home', 'An LED desk lamp.', 5000, 4000, 6000), 4500, 2000, 'mid')

def sensible(eng, role, draw):
    "A well-formed call, so that fuzzed games also move on: offers near the item's range, accepts, waits."
    theirs = eng.standing[role.other]
    return draw(st.sampled_from([
        ToolCall('make_offer', {'price': draw(st.floats(10, 80)) // 0.01 / 100}),
        ToolCall('make_offer', json.dumps({'price': draw(st.integers(1, 99)), 'note': 'ok'})),
        ToolCall('accept_offer', {'offer_id': theirs.id if theirs else 'S1'}),
        ToolCall('reject_offer', {'offer_id': theirs.id if theirs else 'B1'}),
        ToolCall('send_message', {'text': 'hello'}),
        ToolCall('wait', {'seconds': draw(st.floats(0.1, 60))}),
        ToolCall('wait_for_response', '{}')]))

def hostile(draw):
    "Any value an agent could return as a call."
    return draw(st.one_of(st.builds(ToolCall, names, raws, st.one_of(st.text(max_size=4), st.none(), st.integers())),
                          st.tuples(names, raws), st.fixed_dictionaries({'name': names, 'arguments': raws}), values))

N_CALLS = [0]

@pytest.fixture(scope='module', autouse=True)
def count_calls():
    yield
    print(f'\nfuzz: {N_CALLS[0]} engine calls')

def _outcome(name, raw):
    try: return validate_call(name, raw)
    except ToolError as e: return e.code, e.message

SINGLE = [n for n, t in TOOLS.items() if t.single]       # tools whose one required argument has a fast path

@FUZZ
@given(st.sampled_from(SINGLE), st.one_of(st.floats(), st.text(max_size=8), st.integers(), st.booleans()))
def test_fast_path_agrees_with_json_text(name, value):
    "A call's one required argument given as a Python value (the fast path) gets what the same JSON text gets."
    args = {TOOLS[name].single: value}
    assert _outcome(name, args) == _outcome(name, json.dumps(args, allow_nan=True))

@FUZZ
@given(st.data(), st.integers(0, 2**32))
def test_engine_survives_hostile_calls(data, seed):
    eng = Engine(SC, Rules(max_invalid=6, deadline=120), seed)
    for _ in range(40):
        role = eng.next_turn()
        if role is None: break
        eng.take(role)
        calls = data.draw(st.lists(st.sampled_from(['good', 'bad']), max_size=4))
        batch = [sensible(eng, role, data.draw) if kind == 'good' else hostile(data.draw) for kind in calls]
        before, n_invalid = eng.state(), eng.parties[role].invalid
        eng.submit(role, batch)
        N_CALLS[0] += len(batch)
        res = eng.take(role) if eng.parties[role].deferred < 0 else None
        if res and res.results and all(not r.content.get('ok', True) for r in res.results) and not eng.done:
            assert eng.state()[:5] == before[:5]                  # rejected calls change nothing of the game
            assert eng.parties[role].invalid == n_invalid + len(res.results)
    t = eng.transcript({'buyer': 'fuzz', 'seller': 'fuzz'})
    text = dumps(t)                             # strict JSON: no NaN, no bytes, nothing unserialisable
    replay(json.loads(text))                    # and it replays to the same bytes
