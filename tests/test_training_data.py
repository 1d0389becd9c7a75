"""The training chain's data: a tokenizer that reads numbers digit by digit, the `dollars` world, unpaired teacher
tournaments with a scenario per game, cut samples, and the first-offer measures."""
import json, re
from collections import Counter
import pytest
from bilateral.strategies import LADDER
from bilateral.play import play
from bilateral.protocol import Rules, openai_tools
from bilateral.scenarios import sample_scenarios
from bilateral.store import Store
from bilateral.sft import cuts, first_offer_scores, first_situations, ladder_conversations, select_conversations
from bilateral.tiny import SPECIAL, train_tokenizer
from bilateral.tournament import TournamentSpec, plan, run_tournament


@pytest.fixture(scope='module')
def games():
    scs = sample_scenarios(6, 'symmetric', seed=11)
    return [play(sc, 'narrated:boulware', 'narrated:hardliner', Rules(first_mover=('buyer', 'seller')[i % 2]), seed=i)
            for i, sc in enumerate(scs)]


@pytest.fixture(scope='module')
def tok(games):
    return train_tokenizer([c for g in games for c in g.messages.values()], vocab_size=700)


def test_vocabulary_holds_digits_alone_and_no_marker_pieces(tok):
    vocab = [tok.convert_tokens_to_string([t]) for t in tok.get_vocab()]
    assert sorted(v for v in vocab if any(ch.isdigit() for ch in v)) == list('0123456789')
    assert not [v for v in vocab if v not in SPECIAL and any(s[:3] in v for s in SPECIAL)]
    for s in SPECIAL: assert len(tok.encode(s, add_special_tokens=False)) == 1


def test_every_price_in_a_conversation_is_read_digit_by_digit(tok, games):
    for g in games:
        for conv in g.messages.values():
            text = tok.apply_chat_template(conv, tools=openai_tools(), tokenize=False)
            enc = tok(text, return_offsets_mapping=True, add_special_tokens=False)
            spans = [m.span() for m in re.finditer(r'\d+\.\d\d', text)]
            assert len(spans) > 3
            for s, e in spans:
                assert [text[a:b] for a, b in enc['offset_mapping'] if s <= a < e] == list(text[s:e])


def test_dollars_world_is_banded_and_whole():
    scs = sample_scenarios(120, 'dollars', seed=2)
    assert all(2_000 <= s.item.listing_price < 6_700 and s.preset == "dollars" for s in scs)
    assert all(x % 100 == 0 for s in scs for x in (s.item.listing_price, s.buyer_value, s.seller_cost))
    assert len({s.item.id for s in scs}) > 40


def test_unpaired_tournament_plays_a_scenario_per_game(tmp_path):
    spec = TournamentSpec(('narrated:boulware', 'narrated:linear'), 3, 'dollars', seed=4, paired=False)
    tasks = list(plan(spec))
    assert len({t.index for t in tasks}) == len(tasks) == 12
    assert len({(t.scenario.item.id, t.scenario.buyer_value, t.scenario.seller_cost) for t in tasks}) > 8
    paired = list(plan(TournamentSpec(spec.agents, 3, 'dollars', seed=4)))
    assert len({t.index for t in paired}) == 3
    s = run_tournament(spec, tmp_path, concurrency=4, progress=False)
    assert s['stored'] == 12
    again = run_tournament(spec, tmp_path, concurrency=4, progress=False)
    assert again['played'] == 0 and again['stored'] == 12
    sel = select_conversations(tmp_path, agents=['narrated:boulware'], role='buyer')
    assert len({x['scenario_index'] for x in sel}) == len(sel) == 6
    with pytest.raises(Exception, match='unpaired run cannot be extended'):
        run_tournament(spec, tmp_path, progress=False, extend=True)


def test_unpaired_pairs_open_in_both_roles_and_old_stores_are_refused(tmp_path):
    agents = tuple(f'narrated:{a}' for a in LADDER)           # the teacher stage: 64 pairs, an even number
    spec = TournamentSpec(agents, 4, 'dollars', seed=1, paired=False)
    movers = Counter((t.buyer, t.seller, t.rules.first_mover) for t in plan(spec))
    assert len(movers) == 2 * 64 and set(movers.values()) == {2}
    old = {k: v for k, v in spec.defining().items() if k != 'movers'}   # as stores were written before the fix
    with Store(tmp_path) as st: st.claim(old, spec.to_json())
    with pytest.raises(Exception, match='holds another tournament'):
        run_tournament(spec, tmp_path, progress=False)


def test_paired_spec_json_is_unchanged_by_the_option():
    spec = TournamentSpec(('boulware', 'linear'), 2)
    assert 'paired' not in spec.to_json() and 'paired' not in spec.defining()
    assert TournamentSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    un = TournamentSpec(('boulware', 'linear'), 2, paired=False)
    assert TournamentSpec.from_json(json.loads(json.dumps(un.to_json()))) == un


def test_cuts_keep_the_history_up_to_each_of_the_first_replies(games):
    conv = games[0].messages['buyer']
    cs = cuts(conv, 3, whole=True)
    replies = [i for i, m in enumerate(conv) if m['role'] == 'assistant']
    assert [len(c) for c in cs[:3]] == [i + 1 for i in replies[:3]]
    assert all(c == conv[:len(c)] for c in cs) and cs[-1] == conv
    assert cuts(conv, 1) == [conv[:replies[0] + 1]]


def test_ladder_conversations_alternate_first_mover_and_agents():
    convs = ladder_conversations(4, preset='dollars', agents=['linear', 'conceder'], first_mover='alternate')
    firsts = [c[1]['content'].count('You move first.') for c in convs]
    assert firsts == [1, 0, 0, 1, 1, 0, 0, 1]


def test_first_offer_scores_tell_a_constant_from_a_scaled_opening(games):
    sits = first_situations(games)
    assert sits and all(s['messages'][-1]['role'] == 'user' for s in sits)
    scaled = first_offer_scores([s['teacher'] for s in sits], sits)
    assert scaled['close'] == 1.0 and scaled['priced'] == 1.0
    flat = first_offer_scores([4.0] * len(sits), sits)
    assert flat['close'] < 0.5 and flat['band'] < scaled['band']
    assert first_offer_scores([None] * len(sits), sits)['priced'] == 0.0


def test_the_base_models_games_are_played_in_the_chains_world():
    "`ladder_conversations(deadline=60)`: every conversation's prompt states the deadline, and every game kept to it."
    convs = ladder_conversations(4, preset='dollars', agents=['conceder', 'boulware'], deadline=60)
    assert len(convs) == 8 and all('At 60 seconds the negotiation ends' in c[0]['content'] for c in convs)
    ends = [json.loads(m['content'])['now'] for c in convs for m in c
            if m['role'] == 'tool' and '"now"' in m['content']]
    assert ends and max(ends) <= 60
