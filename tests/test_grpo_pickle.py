"""GRPO's reward functions and environment factory pickle (TRL's asynchronous GRPO sends them to a spawned process
that way), and unpickled they play and score the same games, and store them alike."""
import json, multiprocessing, pickle
from dataclasses import replace
from functools import partial
import pytest
from bilateral.engine import replay, scenario_from_json
from bilateral.grpo import CARRIER, REWARD_PARTS, REWARDS, BargainEnv, RewardPart, Rewards, grpo_rows
from bilateral.play import play
from bilateral.protocol import Rules
from bilateral.store import Store
import bilateral.strategies

VARIANTS = [*REWARDS, dict.fromkeys(REWARD_PARTS, 1.0), {'gain': 2.0, 'failed': -1.0}]   # every name, and weights
ROWS = grpo_rows(4, 'both', seed=3)                   # buyer, buyer, seller, seller
PLAYS = [('linear', None), ('hardliner', None), ('boulware', 3), ('spam', None)]   # (scripted agent, replies kept)


def factory(rules: Rules = Rules(deadline=60)):
    "The environment factory as `train_grpo` hands it to TRL."
    return partial(BargainEnv, 'boulware', 'buyer', rules)


def played(make) -> list:
    """Rollouts of environments made by `make`, unsettled as TRL hands them to the rewards: scripted games (one cut
    after a few replies, so that the rollout ends it) and one that spends its invalid-call allowance."""
    envs = []
    for row, (me, keep) in zip(ROWS, PLAYS):
        env = make()
        env.reset(**row)
        if me == 'spam':
            for _ in range(env.rules.max_invalid + 1): str(env.make_offer(price=-1.0))
        else:
            sc = scenario_from_json(json.loads(row['scenario']))
            rules = replace(env.rules, first_mover=row['first_mover'])
            r = row['role']
            b, s = (f'narrated:{me}', 'boulware') if r == 'buyer' else ('boulware', f'narrated:{me}')
            replies = [m for m in play(sc, b, s, rules, row['seed']).messages[r][2:] if m['role'] == 'assistant']
            for m in replies[:keep]:
                [str(getattr(env, c['function']['name'])(**{CARRIER: {'name': c['function']['name'],
                                                                      'arguments': c['function']['arguments']}}))
                 for c in m['tool_calls']]
        envs.append(env)
    return envs


def score(funcs, envs) -> list:
    logged = {}
    return [f(environments=envs, completions=[[]] * len(envs), log_metric=logged.__setitem__) for f in funcs], logged


@pytest.mark.parametrize('variant', VARIANTS, ids=[v if isinstance(v, str) else '+'.join(v) for v in VARIANTS])
def test_every_reward_variant_pickles_and_scores_alike(variant):
    "Each variant's reward functions, pickled and loaded, keep TRL's names and give the same rewards and logs."
    funcs = Rewards(variant).funcs()
    back = pickle.loads(pickle.dumps(funcs))
    assert all(type(f) is RewardPart for f in back)
    assert [f.__name__ for f in back] == [f.__name__ for f in funcs] == list(Rewards(variant).weights)
    assert len({id(f.rewards) for f in back}) == 1      # the components still share one `Rewards`
    envs = played(factory())
    assert {e.eng.outcome.reason.value for e in envs if e.eng.done} >= {'deal', 'invalid_calls'}
    got, want = score(back, played(factory())), score(funcs, envs)
    assert got == want
    assert back[0].rewards.n == funcs[0].rewards.n == len(envs)


def test_the_environment_factory_pickles_and_plays_the_same_games():
    "The factory `train_grpo` hands TRL, pickled and loaded, makes environments that play the same games."
    make = factory()
    back = pickle.loads(pickle.dumps(make))
    assert (back.func, back.args) == (make.func, make.args)
    for a, b in zip(played(make), played(back)):
        a._end_rollout(None)
        b._end_rollout(None)
        assert a.messages == b.messages
        assert a.eng.transcript({}) == b.eng.transcript({})


def test_a_pickled_rewards_stores_in_its_folder(tmp_path):
    "A `Rewards` with a store pickles as the store's folder, opens it again, and stores the same games there."
    fresh = lambda d: Rewards('share-invalid-failed', Store(tmp_path / d), names={'policy': 'p'}, ids='x-')
    first, second = fresh('a'), fresh('b')
    back = pickle.loads(pickle.dumps(second))
    assert back.store.path == second.store.path and back.store is not second.store
    score(first.funcs(), played(factory()))
    score(back.funcs(), played(factory()))
    ids = [f'x-{i:07d}' for i in range(len(ROWS))]
    with Store(tmp_path / 'a', create=False) as a, Store(tmp_path / 'b', create=False) as b:
        assert sorted(a.done_ids()) == sorted(b.done_ids()) == ids
        assert list(a.transcripts()) == list(b.transcripts())
        assert [a.messages(g) for g in ids] == [b.messages(g) for g in ids]
        assert a.rows().equals(b.rows())
        for _, t in b.transcripts(): replay(t)


def _score_in_child(blob: bytes, q):
    "In a spawned interpreter, as TRL's rollout worker: load the rewards and the factory, play, score."
    funcs, make = pickle.loads(blob)
    q.put(score(funcs, played(make)))


def test_a_spawned_process_loads_and_scores_them():
    "A fresh interpreter (the `spawn` start method, as TRL's asynchronous GRPO uses) loads and scores them alike."
    funcs, make = Rewards('share-invalid-failed').funcs(), factory()
    ctx = multiprocessing.get_context('spawn')
    q = ctx.Queue()
    p = ctx.Process(target=_score_in_child, args=(pickle.dumps((funcs, make)), q))
    p.start()
    try: got = q.get(timeout=300)
    finally:
        p.join(30)
        if p.is_alive(): p.kill()
    assert got == score(funcs, played(make))
