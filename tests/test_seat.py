"""A seat played from outside (`bilateral.seat`): the game it plays is `play()`'s, and closing an unfinished game works
from any thread."""
import asyncio, threading, time
import pytest
from bilateral.chat import ChatAgent
from bilateral.core import Role
from bilateral.fakeserver import play_reply
from bilateral.play import play, run_sync
from bilateral.scenarios import sample_scenarios
from bilateral.seat import RemoteSeat, Seated, outside_reply, run_on

class Policy(ChatAgent):
    async def complete(self, messages, tools):
        content, calls = play_reply(messages)
        return outside_reply(content, [{'name': n, 'arguments': a} for n, a in calls])

@pytest.mark.parametrize('seed', range(4))
def test_remote_seats_play_play_s_game(seed):
    sc = sample_scenarios(4, seed=seed)[seed]
    async def outside():
        seats = {Role.BUYER: RemoteSeat(), Role.SELLER: 'linear' if seed % 2 else RemoteSeat()}
        g, convo = Seated(sc, seats[Role.BUYER], seats[Role.SELLER], seed=seed), {}
        role = await g.start()
        while role is not None:
            c = convo.setdefault(role.value, [])
            c += g.remote[role].new_messages()
            content, calls = play_reply(c)
            role = await g.reply(role, content, [{'name': n, 'arguments': a} for n, a in calls])
        for r, seat in g.remote.items(): convo[r.value] += seat.new_messages()
        return g.result, convo
    got, convo = run_sync(outside())
    ref = play(sc, Policy(), 'linear' if seed % 2 else Policy(), seed=seed)
    assert got.transcript['log'] == ref.transcript['log'] and got.outcome == ref.outcome
    assert convo == {r: m for r, m in ref.messages.items() if r in convo}

def test_close_from_another_thread_while_the_loop_runs():
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    g = Seated(sample_scenarios(1)[0], RemoteSeat(), 'boulware')
    assert asyncio.run_coroutine_threadsafe(g.start(), loop).result(5) is Role.BUYER
    g.close()
    for _ in range(100):
        if g.task.done(): break
        time.sleep(0.01)
    assert g.task.cancelled()
    loop.call_soon_threadsafe(loop.stop)
    t.join(5)

def test_a_reply_to_a_seat_that_does_not_wait_fails():
    loop = asyncio.new_event_loop()
    g = Seated(sample_scenarios(1)[0], RemoteSeat(), RemoteSeat(), seed=2)
    assert run_on(loop, g.start()) is Role.BUYER
    with pytest.raises(ValueError, match='not waiting'): run_on(loop, g.reply(Role.SELLER, '', []))
    g.close()
    assert g.task.cancelled()
