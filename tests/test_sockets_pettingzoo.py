"""The PettingZoo socket: PettingZoo's own `api_test` and `seed_test`, and an AEC loop that reproduces `play()`."""
import json, warnings
import pytest
pytest.importorskip('pettingzoo')
from pettingzoo.test import api_test, seed_test
from bilateral.chat import ChatAgent
from bilateral.engine import scenario_json
from bilateral.fakeserver import play_reply
from bilateral.pettingzoo import BargainAEC
from bilateral.play import play
from bilateral.protocol import Rules
from bilateral.scenarios import sample_scenarios
from bilateral.seat import outside_reply

class Policy(ChatAgent):
    "The fault endpoint's `ok` policy as a chat agent."
    async def complete(self, messages, tools):
        content, calls = play_reply(messages)
        return outside_reply(content, [{'name': n, 'arguments': a} for n, a in calls])

def test_api_test_passes():
    env = BargainAEC()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')      # "Observation is not NumPy array": the dict; its array is checked
        api_test(env, num_cycles=200)
    env.close()

def test_seed_test_passes():
    seed_test(BargainAEC, num_cycles=200)
    seed_test(lambda: BargainAEC(rules=Rules(deadline=60, first_mover='seller')), num_cycles=200)

def _aec_game(env, **kw):
    env.reset(**kw)
    convo, rewards = {p: [] for p in env.possible_agents}, {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        assert env.observation_space(agent).contains(obs)
        convo[agent] += json.loads(obs['text'])
        if term or trunc:
            rewards[agent] = reward
            env.step(None)
            continue
        content, calls = play_reply(convo[agent])
        env.step(json.dumps([{'name': n, 'arguments': a} for n, a in calls]) if not content else
                 {'content': content, 'tool_calls': [{'name': n, 'arguments': a} for n, a in calls]})
    return convo, rewards

@pytest.mark.parametrize('seed', range(6))
def test_aec_loop_reproduces_play(seed):
    mover = 'buyer' if seed % 2 else 'seller'
    env = BargainAEC(rules=Rules(first_mover=mover))
    convo, rewards = _aec_game(env, seed=seed)
    ref = play(sample_scenarios(1, seed=seed)[0], Policy(), Policy(), Rules(first_mover=mover), seed)
    assert convo == ref.messages
    keep = ('seed', 'scenario', 'rules', 'log', 'outcome')          # all but the agents' names and self-reports
    assert {k: env.result.transcript[k] for k in keep} == {k: ref.transcript[k] for k in keep}
    assert set(rewards) == {'buyer', 'seller'} and env.agents == []

def test_options_scenario_and_text_replies():
    sc = sample_scenarios(5, preset='list-high', seed=9)[4]
    env = BargainAEC()
    env.reset(seed=3, options={'scenario': scenario_json(sc), 'first_mover': 'seller'})
    assert env.agent_selection == 'seller'
    for _ in range(9):                                  # text without a tool call, until the engine ends the game
        env.step('I will think about it.')
    assert env.result.outcome.reason.value == 'invalid_calls'
    assert env.result.scenario == sc
    obs = env.observe('seller')
    assert obs['observation'][-1] == 1.0
    env.reset()
    assert env.seed_now == 4

RECORDED = '{"ok": true, "recorded": true}'      # a seat's answer to a belief report

def _aside(m: dict) -> bool:
    "A message of the belief probes: the question, a `report_belief` call, or its answer."
    return 'report_belief' in str(m.get('tool_calls')) + str(m.get('content')) or m.get('content') == RECORDED

def test_both_seats_answer_belief_probes_inside_the_game():
    """`probe='tool'`: each seat is asked in its conversation every 3 simulated seconds, answers with `report_belief`
    (0.8 of the listing), then moves; the game is the one played without probes, the answers are in the record."""
    sc = sample_scenarios(1, seed=5)[0]
    L = sc.item.listing_price / 100
    def game(env):
        env.reset(seed=5)
        convo = {p: [] for p in env.possible_agents}
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            convo[agent] += json.loads(obs['text'])
            if term or trunc:
                env.step(None)
                continue
            if convo[agent][-1]['role'] == 'user' and 'report_belief' in convo[agent][-1]['content']:
                env.step(json.dumps([{'name': 'report_belief', 'arguments': {'estimate': 0.8 * L}}]))
                continue
            content, calls = play_reply([m for m in convo[agent] if not _aside(m)])
            env.step({'content': content, 'tool_calls': [{'name': n, 'arguments': a} for n, a in calls]})
        return env.result
    plain, probed = game(BargainAEC()), game(BargainAEC(probe='tool', probe_every=3))
    no_ids = lambda r: [{k: v for k, v in e.items() if k != 'id'} for e in r.transcript['log']]   # ids count asides
    assert no_ids(probed) == no_ids(plain) and probed.outcome == plain.outcome
    for role in ('buyer', 'seller'):
        p = probed.info[role]['probes']
        assert p['mode'] == 'tool' and p['every'] == 3 and 'probes' not in plain.info[role]
        assert p['answers'] and {a['estimate'] for a in p['answers']} == {round(0.8 * L * 100)}
        assert [a['why'] for a in p['answers']] == ['every'] * len(p['answers'])
    with pytest.raises(Exception, match='probe=tool, not request'): BargainAEC(probe='request')
