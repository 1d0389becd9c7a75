"Every end reason is reached by a constructed game, with the right party and time."
import pytest
from bilateral.core import *
from bilateral.engine import *
from bilateral.protocol import *
from bilateral.agents import Agent
from bilateral.play import play
from conftest import drive

ITEM = Item('lamp', 'Desk lamp', 'home', 'An LED desk lamp.', 5000, 4000, 6000)
SC = Scenario(ITEM, 4500, 2000, 'mid')
B, S = Role.BUYER, Role.SELLER
OFFER_30 = (B, [('make_offer', {'price': 30}), ('wait_for_response', {})])   # the buyer offers $30 (B1) and waits

# Games that end with each reason, constructed; each returns the engine or the game result (both have `.outcome`).

def deal(): return drive(Engine(SC), [OFFER_30, (S, [('accept_offer', {'offer_id': 'B1'})])])
def quit_game(): return drive(Engine(SC), [OFFER_30, (S, [('quit_negotiation', {})])])
def both_idle():
    "Two passes in a row, one by each party: the seller waits once, the buyer is woken and waits too."
    script = [OFFER_30, (S, [('wait_for_response', {})]), (B, [('wait_for_response', {})])]
    return drive(Engine(SC), script)

def deadline_on_wake():
    script = [(B, [('make_offer', {'price': 30}), ('wait', {'seconds': 59})]), (S, [('wait', {'seconds': 59})])]
    return drive(Engine(SC, Rules(deadline=60)), script)

def event_cap():
    script = [OFFER_30, (S, [('make_offer', {'price': 40}), ('wait_for_response', {})]),
              (B, [('make_offer', {'price': 31}), ('wait_for_response', {})])]
    return drive(Engine(SC, Rules(max_events=5)), script)

def invalid_calls():
    eng = Engine(SC, Rules(max_invalid=3))
    eng.next_turn()
    for _ in range(4): eng.submit(B, [ToolCall('make_offer', '{"price": "cheap"}')])
    return eng

class Broken(Agent):
    async def act(self, obs): raise ConnectionError('endpoint down')

def agent_error(): return play(SC, Broken(), 'linear')

def stopped(reason):
    "The seller's agent stops itself with a typed `reason`."
    from bilateral.agents import AgentStop
    class Stopper(Agent):
        async def act(self, obs): raise AgentStop(reason, f'stopped: {reason.value}')
    return play(SC, 'linear', Stopper())

ENDINGS = {EndReason.DEAL: deal, EndReason.QUIT: quit_game, EndReason.BOTH_IDLE: both_idle,
           EndReason.DEADLINE: deadline_on_wake, EndReason.EVENT_CAP: event_cap, EndReason.INVALID_CALLS: invalid_calls,
           EndReason.AGENT_ERROR: agent_error, EndReason.AGENT_LIMIT: lambda: stopped(EndReason.AGENT_LIMIT),
           EndReason.CONTEXT_OVERFLOW: lambda: stopped(EndReason.CONTEXT_OVERFLOW),
           EndReason.CONTENT_FILTER: lambda: stopped(EndReason.CONTENT_FILTER)}

@pytest.mark.parametrize('reason', list(EndReason))
def test_every_reason_is_reached(reason):
    "Each EndReason, one added later included, has a constructed game that really ends with it."
    assert reason in ENDINGS, f'no constructed game ends with {reason}: add one to ENDINGS'
    assert ENDINGS[reason]().outcome.reason is reason

def test_deal():
    o = deal().outcome
    assert (o.reason, o.price, o.by) == (EndReason.DEAL, 3000, S)

def test_quit():
    o = quit_game().outcome
    assert (o.reason, o.by, o.price) == (EndReason.QUIT, S, None)

def test_both_idle():
    "Both parties' latest turns are passes: the game ends at the time of the second pass, by nobody."
    eng = both_idle()
    assert (eng.outcome.reason, eng.outcome.by, eng.outcome.t) == (EndReason.BOTH_IDLE, None, eng.now)
    assert eng.parties[B].passed and eng.parties[S].passed

def test_deadline_on_wake():
    o = deadline_on_wake().outcome
    assert o.reason is EndReason.DEADLINE and o.t == 60

def test_deadline_on_call():
    eng = Engine(SC, Rules(deadline=3, latency=(2.0, 2.0)))
    assert eng.next_turn() is B
    eng.submit(B, [ToolCall('make_offer', {'price': 30}), ToolCall('send_message', {'text': 'hi'})])
    assert eng.outcome.reason is EndReason.DEADLINE and eng.outcome.t == 3
    assert eng.take(B).results[1].content['error'] == 'game_over'

def test_event_cap():
    o = event_cap().outcome
    assert o.reason is EndReason.EVENT_CAP and o.n_events == 5

def test_invalid_calls():
    eng = invalid_calls()
    assert (eng.outcome.reason, eng.outcome.by) == (EndReason.INVALID_CALLS, B)
    assert eng.next_turn() is None

def test_no_tool_call_counts_as_invalid():
    eng = Engine(SC, Rules(max_invalid=1))
    eng.next_turn()
    eng.submit(B, [])
    assert eng.take(B).update['error'] == 'no_tool_call' and not eng.done
    eng.submit(B, [])
    assert eng.outcome.reason is EndReason.INVALID_CALLS

def test_agent_error():
    r = agent_error()
    assert (r.outcome.reason, r.outcome.by) == (EndReason.AGENT_ERROR, B)
    assert any('endpoint down' in rec.get('agent_error', '') for rec in r.transcript['log'])

@pytest.mark.parametrize('reason', [EndReason.AGENT_LIMIT, EndReason.CONTEXT_OVERFLOW, EndReason.CONTENT_FILTER])
def test_agent_stops_with_a_typed_reason(reason):
    r = stopped(reason)
    assert (r.outcome.reason, r.outcome.by, r.outcome.deal) == (reason, S, False)

def test_seller_moves_first():
    eng = Engine(SC, Rules(first_mover='seller'))
    assert eng.next_turn() is S

def test_waiting_party_sees_final_outcome():
    eng = deal()
    final = eng.take(B).results[-1].content
    expected = {'reason': 'deal', 'deal': True, 'price': 30.0, 'by': 'seller', 't': round(eng.outcome.t, 2)}
    assert expected['t'] > 0
    assert final['game_over'] == expected

def test_driver_misuse_raises():
    eng = Engine(SC)
    eng.next_turn()
    with pytest.raises(BilateralError, match="not seller's turn"): eng.submit(S, [ToolCall('wait_for_response')])


def test_one_wait_does_not_end_the_game():
    "The first mover's first wait gives the second mover its turn; a single pass wakes the other side."
    eng = Engine(SC)
    drive(eng, [(B, [('wait_for_response', {})]), (S, [('make_offer', {'price': 40}), ('wait_for_response', {})])])
    assert eng.outcome is None and eng.standing[S].price == 4000
    eng = drive(Engine(SC), [OFFER_30, (S, [('wait_for_response', {})])])
    assert eng.outcome is None and eng.turn is B
    assert eng.take(B).results[-1].content['woke_by'] == 'opponent_passed'

def test_two_passes_by_one_party_do_not_end_the_game():
    "A timed wait is a pass too, but the seller's latest turn was a counter-offer: the seller gets a turn."
    script = [OFFER_30, (S, [('make_offer', {'price': 40}), ('wait_for_response', {})]),
              (B, [('wait', {'seconds': 10})]), (B, [('wait_for_response', {})])]
    eng = drive(Engine(SC), script)
    assert eng.outcome is None and eng.turn is S
    assert eng.take(S).results[-1].content['woke_by'] == 'opponent_passed'
    eng.submit(S, [ToolCall('wait_for_response', {})])
    assert eng.next_turn() is None and eng.outcome.reason is EndReason.BOTH_IDLE

def test_before_the_rules_one_wait_ended_the_game():
    old = Rules(counter_rejects=False, wake_on_pass=False)
    assert drive(Engine(SC, old), [OFFER_30, (S, [('wait_for_response', {})])]).outcome.reason is EndReason.BOTH_IDLE
    assert drive(Engine(SC, old), [(B, [('wait_for_response', {})])]).outcome.reason is EndReason.BOTH_IDLE

def test_a_counter_offer_rejects_the_standing_offer():
    "Mirror-image rule: after S1 counters B1, B1 no longer stands; with the rule off it stands and can be accepted."
    script = [OFFER_30, (S, [('make_offer', {'price': 40}), ('accept_offer', {'offer_id': 'B1'})])]
    eng = drive(Engine(SC), script)
    res = eng.take(S).results
    assert res[0].content['rejected'] == 'B1' and res[1].content['error'] == 'stale_offer'
    assert eng.standing[B] is None and eng.outcome is None
    old = drive(Engine(SC, Rules(counter_rejects=False)), script)
    assert old.outcome.reason is EndReason.DEAL and old.outcome.price == 3000
