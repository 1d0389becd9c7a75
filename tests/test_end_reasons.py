"Every end reason is reached by a constructed game, with the right party and time."
import pytest
from bilateral.core import *
from bilateral.engine import *
from bilateral.agents import Agent, play

ITEM = Item('lamp', 'Desk lamp', 'home', 'An LED desk lamp.', 5000, 4000, 6000)
SC = Scenario(ITEM, 4500, 2000, 'mid')
B, S = Role.BUYER, Role.SELLER

def drive(eng, script):
    "Submit (role, calls) batches, checking who the engine says acts."
    for role, calls in script:
        assert eng.next_turn() is role
        eng.take(role)
        eng.submit(role, [ToolCall(*c) for c in calls])
    eng.next_turn()
    return eng.outcome

def test_deal():
    o = drive(Engine(SC), [(B, [('make_offer', {'price': 30}), ('wait_for_response', {})]), (S, [('accept_offer', {'offer_id': 'B1'})])])
    assert (o.reason, o.price, o.by) == (EndReason.DEAL, 3000, S)

def test_quit():
    o = drive(Engine(SC), [(B, [('make_offer', {'price': 30}), ('wait_for_response', {})]), (S, [('quit_negotiation', {})])])
    assert (o.reason, o.by, o.price) == (EndReason.QUIT, S, None)

def test_both_idle():
    o = drive(Engine(SC), [(B, [('make_offer', {'price': 30}), ('wait_for_response', {})]), (S, [('wait_for_response', {})])])
    assert o.reason is EndReason.BOTH_IDLE

def test_deadline_on_wake():
    o = drive(Engine(SC, Rules(deadline=60)), [(B, [('make_offer', {'price': 30}), ('wait', {'seconds': 59})]), (S, [('wait', {'seconds': 59})])])
    assert o.reason is EndReason.DEADLINE and o.t == 60

def test_deadline_on_call():
    eng = Engine(SC, Rules(deadline=3, latency=(2.0, 2.0)))
    assert eng.next_turn() is B
    eng.submit(B, [ToolCall('make_offer', {'price': 30}), ToolCall('send_message', {'text': 'hi'})])
    assert eng.outcome.reason is EndReason.DEADLINE and eng.outcome.t == 3
    assert eng.take(B).results[1].content['error'] == 'game_over'

def test_event_cap():
    eng = Engine(SC, Rules(max_events=5))
    steps = [(B, [('make_offer', {'price': 30}), ('wait_for_response', {})]), (S, [('make_offer', {'price': 40}), ('wait_for_response', {})]),
             (B, [('make_offer', {'price': 31}), ('wait_for_response', {})])]
    o = drive(eng, steps)
    assert o.reason is EndReason.EVENT_CAP and o.n_events == 5

def test_invalid_calls():
    eng = Engine(SC, Rules(max_invalid=3))
    eng.next_turn()
    for _ in range(4): eng.submit(B, [ToolCall('make_offer', '{"price": "cheap"}')])
    assert (eng.outcome.reason, eng.outcome.by) == (EndReason.INVALID_CALLS, B)
    assert eng.next_turn() is None

def test_no_tool_call_counts_as_invalid():
    eng = Engine(SC, Rules(max_invalid=1))
    eng.next_turn(); eng.submit(B, [])
    assert eng.take(B).update['error'] == 'no_tool_call' and not eng.done
    eng.submit(B, [])
    assert eng.outcome.reason is EndReason.INVALID_CALLS

def test_agent_error():
    class Broken(Agent):
        async def act(self, obs): raise ConnectionError('endpoint down')
    r = play(SC, Broken(), 'linear')
    assert (r.outcome.reason, r.outcome.by) == (EndReason.AGENT_ERROR, B)
    assert any('endpoint down' in rec.get('agent_error', '') for rec in r.transcript['log'])

@pytest.mark.parametrize('reason', [EndReason.AGENT_LIMIT, EndReason.CONTEXT_OVERFLOW, EndReason.CONTENT_FILTER])
def test_agent_stops_with_a_typed_reason(reason):
    from bilateral.agents import AgentStop
    class Stopper(Agent):
        async def act(self, obs): raise AgentStop(reason, f'stopped: {reason.value}')
    r = play(SC, 'linear', Stopper())
    assert (r.outcome.reason, r.outcome.by, r.outcome.deal) == (reason, S, False)

def test_seller_moves_first():
    eng = Engine(SC, Rules(first_mover='seller'))
    assert eng.next_turn() is S

def test_every_reason_covered():
    "The tests above reach every EndReason."
    covered = {'deal', 'quit', 'deadline', 'both_idle', 'event_cap', 'invalid_calls', 'agent_error', 'agent_limit', 'context_overflow', 'content_filter'}
    assert covered == {r.value for r in EndReason}

def test_waiting_party_sees_final_outcome():
    eng = Engine(SC)
    drive(eng, [(B, [('make_offer', {'price': 30}), ('wait_for_response', {})]), (S, [('accept_offer', {'offer_id': 'B1'})])])
    final = eng.take(B).results[-1].content
    assert final['game_over'] == {'reason': 'deal', 'deal': True, 'price': 30.0, 'by': 'seller', 't': final['game_over']['t']}

def test_driver_misuse_raises():
    eng = Engine(SC); eng.next_turn()
    with pytest.raises(BilateralError, match="not seller's turn"): eng.submit(S, [ToolCall('wait_for_response')])
