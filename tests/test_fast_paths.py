"""The driver's fast path for agents that answer at once plays the same games, byte for byte, as the awaited path."""
import pytest
from bilateral.agents import Agent, make_agent
from bilateral.core import dumps
from bilateral.play import play
from bilateral.protocol import Rules
from bilateral.scenarios import sample_scenarios
from bilateral.strategies import LADDER


class Awaited(Agent):
    "A spec's agent played through `act`, as every agent that waits is."
    def __init__(self, spec): self.inner, self.name = make_agent(spec), spec
    async def start(self, brief): await self.inner.start(brief)
    async def act(self, obs): return self.inner.act_now(obs)


@pytest.mark.parametrize('buyer', LADDER + ['random:0.3'])
def test_fast_path_plays_the_same_games(buyer):
    rules = (Rules(), Rules(first_mover='seller', latency=(0.1, 9.0)))
    for i, sc in enumerate(sample_scenarios(6, seed=11)):
        for seller in LADDER + ['random:0.5']:
            r = rules[i % 2]
            fast = play(sc, buyer, seller, r, seed=i)
            slow = play(sc, Awaited(buyer), Awaited(seller), r, seed=i)
            assert dumps(fast.transcript) == dumps(slow.transcript), (buyer, seller, i)


def test_a_crash_in_act_now_ends_the_game_as_before():
    class Broken(Agent):
        def act_now(self, obs): raise RuntimeError('out of memory')
    sc = sample_scenarios(1, seed=3)[0]
    r = play(sc, Broken(), 'linear', seed=3)
    assert (r.outcome.reason.value, r.failure['cause'], r.failure['role']) == ('agent_error', 'agent_crash', 'buyer')
