"Same seed, same transcript; replay reproduces; golden transcripts pin the semantics."
import itertools, json
import pytest
from bilateral.core import ReplayError
from bilateral.core import dumps
from bilateral.engine import replay
from bilateral.play import play
from bilateral.scenarios import sample_scenarios
from bilateral.strategies import LADDER
from make_golden import GOLDEN, golden_game, name

AGENTS = LADDER + ['random:0.3']
PAIRS = list(itertools.product(AGENTS, AGENTS))

@pytest.mark.parametrize('buyer,seller', PAIRS)
def test_same_seed_same_bytes_and_replay(buyer, seller):
    for i, sc in enumerate(sample_scenarios(3, 'mixed', seed=42)):
        a, b = play(sc, buyer, seller, seed=i), play(sc, buyer, seller, seed=i)
        ta = dumps(a.transcript)
        assert ta == dumps(b.transcript)
        eng = replay(json.loads(ta))
        assert eng.outcome == a.outcome and dumps(eng.transcript(a.agents)) == ta

def test_different_seed_different_transcript():
    sc = sample_scenarios(1, seed=1)[0]
    one, two = (dumps(play(sc, 'linear', 'linear', seed=s).transcript) for s in (1, 2))
    assert one != two

def test_replay_detects_tampering():
    t = json.loads(dumps(play(sample_scenarios(1, seed=3)[0], 'boulware', 'conceder', seed=3).transcript))
    calls = [rec for rec in t['log'] if rec.get('tool') == 'make_offer']
    calls[0]['result']['price'] += 1        # a recorded result the engine would not give
    with pytest.raises(ReplayError): replay(t)
    t2 = json.loads(dumps(play(sample_scenarios(1, seed=3)[0], 'boulware', 'conceder', seed=3).transcript))
    t2['outcome']['price'] = 1.0            # a forged outcome
    with pytest.raises(ReplayError): replay(t2)

@pytest.mark.parametrize('spec', GOLDEN, ids=lambda s: name(*s))
def test_golden_transcripts(spec, root):
    "Regenerating a golden game gives the stored bytes; any semantic change of the engine or ladder fails here."
    stored = (root / 'data' / 'golden' / name(*spec)).read_text().rstrip('\n')
    why = 'run tools/make_golden.py only for an intended change, and say why in the commit'
    assert dumps(golden_game(*spec).transcript) == stored, why
    replay(json.loads(stored))

def test_golden_set_covers_variety(root):
    outcomes = [json.loads((root / 'data' / 'golden' / name(*s)).read_text())['outcome']['reason'] for s in GOLDEN]
    assert 'deal' in outcomes and len(set(outcomes)) >= 2

def test_records_from_before_the_rules_still_replay(root):
    "Golden transcripts written before the mirror-image and passing rules replay with both off, as they were played."
    old = sorted((root / 'data' / 'golden' / 'before-rules').glob('*.json'))
    assert len(old) == 5                    # the five games recorded before the rules
    for f in old:
        t = json.loads(f.read_text())
        assert 'counter_rejects' not in t['rules']
        assert replay(t).outcome.reason.value == t['outcome']['reason']
