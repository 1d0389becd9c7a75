"""SFT data from a tournament store: the filters, the split by scenario, samples that are exactly the tournament's
conversations as the trainer sees them, and a LoRA SFT run whose merged model plays."""
import json, math
import pytest
from bilateral.chat import sendable
from bilateral.play import play
from bilateral.protocol import openai_tools
from bilateral.scenarios import sample_scenarios
from bilateral.sft import (SFT_CONFIGS, conversation_dataset, load_sft_data, save_sft_data, select_conversations,
                           sft_tokens, sft_trainer, load_lora_model, train_lora_sft)
from bilateral.store import Store
from bilateral.tournament import TournamentSpec, run_tournament

AGENTS = ('narrated:boulware', 'narrated:linear', 'narrated:conceder', 'boulware')


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    "A small tournament of narrated ladder agents, and one plain scripted agent that keeps no conversation."
    d = tmp_path_factory.mktemp('run')
    run_tournament(TournamentSpec(AGENTS, games_per_pair=3, preset='mixed', seed=1), d, progress=False, workers=1)
    return d


@pytest.fixture(scope='module')
def data(run, tmp_path_factory):
    "All conversations of the run, saved as an SFT dataset."
    d = tmp_path_factory.mktemp('data')
    save_sft_data(conversation_dataset(select_conversations(run), test_size=0.3, seed=2), d, {'test_size': 0.3}, run)
    return d


def expected(run, agents=None, role=None, deal=None, min_share=None, tiers=None, opponents=None) -> set:
    "The (game_id, role) pairs the filters must select, computed from the game rows alone."
    with Store(run, create=False) as st: rows = st.rows().to_dict('records')
    out = set()
    for r in rows:
        for me, other in (('buyer', 'seller'), ('seller', 'buyer')):
            ok = ((agents is None or r[me] in agents) and (role is None or me == role)
                  and (deal is None or bool(r['deal']) == deal) and (tiers is None or r['tier'] in tiers)
                  and (min_share is None or r[f'{me}_share'] >= min_share)
                  and (opponents is None or r[other] in opponents) and r[me].startswith('narrated:'))
            if ok: out.add((r['game_id'], me))
    return out


@pytest.mark.parametrize('filters', [
    {}, {'agents': ['narrated:boulware']}, {'role': 'seller', 'deal': True}, {'deal': False},
    {'min_share': 0.6, 'opponents': ['narrated:conceder', 'boulware']}, {'tiers': ['low', 'high'], 'role': 'buyer'},
    {'agents': ['boulware']}])
def test_filters_select_exactly_the_right_rows(run, filters):
    sel = select_conversations(run, **filters)
    assert {(s['game_id'], s['role']) for s in sel} == expected(run, **filters)
    with Store(run, create=False) as st: rows = st.rows().set_index('game_id')
    for s in sel:
        r = rows.loc[s['game_id']]
        other = 'seller' if s['role'] == 'buyer' else 'buyer'
        assert (s['agent'], s['opponent'], s['tier'], s['scenario_index']) == \
            (r[s['role']], r[other], r['tier'], r['scenario_index'])
        assert s['deal'] == bool(r['deal']) and (s['share'] == r[f"{s['role']}_share"] or math.isnan(s['share']))


def test_filters_are_not_vacuous(run):
    "The selections above differ: each filter drops rows, and the plain scripted agent gives none."
    n = len(select_conversations(run))
    assert n == len(expected(run)) > 0
    assert 0 < len(select_conversations(run, deal=True)) < n and select_conversations(run, agents=['boulware']) == []
    assert 0 < len(select_conversations(run, min_share=0.6)) < n


@pytest.mark.parametrize('test_size,seed', [(0.1, 0), (0.3, 1), (0.5, 7)])
def test_split_shares_no_scenario(run, test_size, seed):
    sel = select_conversations(run)
    dd = conversation_dataset(sel, test_size=test_size, seed=seed)
    train, test = set(dd['train']['scenario_index']), set(dd['test']['scenario_index'])
    assert train and test and not train & test
    assert train | test == {s['scenario_index'] for s in sel} and len(dd['train']) + len(dd['test']) == len(sel)


def test_saved_data_round_trips_with_card(run, data):
    dd, card = load_sft_data(data), (data / 'README.md').read_text()
    info = json.loads((data / 'sft_data.json').read_text())
    with Store(run, create=False) as st: spec = st.get_meta('spec')
    assert info['source_run']['spec'] == spec and str(run.resolve()) in card
    assert info['counts']['train']['conversations'] == len(dd['train']) and (data / 'data' / 'test.parquet').exists()


def test_sft_samples_are_exactly_the_tournament_messages(run, data, tiny_model):
    "Decoded rows are the stored conversations; the trainer's tokens are the tournament's rendering of them."
    model_dir, _ = tiny_model
    split = load_sft_data(data)['train']
    model, tok, lora = load_lora_model(str(model_dir), SFT_CONFIGS['tiny'], 'trl')
    ds = sft_tokens(tok, split, max_length=100_000)
    trained = sft_trainer(model, tok, ds, SFT_CONFIGS['tiny'], lora, max_steps=1).train_dataset
    with Store(run, create=False) as st:
        for i in (0, len(split) // 2, len(split) - 1):
            row = split[i]
            conv = st.messages(row['game_id'])[row['role']]
            assert json.loads(row['messages']) == conv and json.loads(row['tools']) == openai_tools()
            text = tok.decode(trained[i]['input_ids'])
            assert text == tok.apply_chat_template(sendable(conv), tools=openai_tools(), tokenize=False)
            for k, m in enumerate(conv):      # every prompt the agent was sent in the game starts the trained text
                if m['role'] == 'assistant':
                    sent = tok.apply_chat_template(sendable(conv[:k]), tools=openai_tools(), tokenize=False,
                                                   add_generation_prompt=True)
                    assert text.startswith(sent)
            learned = tok.decode([t for t, y in zip(trained[i]['input_ids'], trained[i]['labels']) if y != -100])
            calls = [c['function']['arguments'] for m in conv if m['role'] == 'assistant' for c in m['tool_calls']]
            assert all(a in learned for a in calls) and 'Your private value' not in learned


def test_lora_sft_merged_model_plays(data, tiny_model, tmp_path):
    model_dir, _ = tiny_model
    rep = train_lora_sft(model_dir, data, tmp_path / 'sft', max_steps=3)
    assert rep['steps'] == 3 and rep['train_tokens'] > 0 and rep['tokens_per_s'] > 0 and rep['backend'] == 'trl'
    assert math.isfinite(rep['final_loss']) and rep['agent'] == f"hf:{tmp_path / 'sft'}"
    assert (tmp_path / 'sft' / 'model.safetensors').exists() and not (tmp_path / 'sft' / 'adapter_config.json').exists()
    assert (tmp_path / 'sft' / 'model.safetensors').read_bytes() != (model_dir / 'model.safetensors').read_bytes()
    g = play(sample_scenarios(1, seed=9)[0], 'boulware', f"{rep['agent']}?window=4&max_turns=12", seed=9)
    assert g.outcome.reason.scored and g.messages['seller'][2]['role'] == 'assistant'


def test_one_scenario_saves_a_train_split_that_loads(tmp_path):
    "A selection from one scenario has no test split; what is saved loads back (an empty split would not)."
    from bilateral.sft import sft_data
    from bilateral.tournament import TournamentSpec, run_tournament
    run_tournament(TournamentSpec(('narrated:boulware', 'narrated:linear'), 1), tmp_path / 'run', workers=1)
    sft_data(tmp_path / 'run', tmp_path / 'data')
    dd = load_sft_data(tmp_path / 'data')
    assert list(dd) == ['train'] and len(dd['train']) == 8


def test_endings_train_each_of_the_last_replies_alone(data, tiny_model):
    "An ending sample is the history up to one of the last replies, and its labels are that reply's tokens only."
    model_dir, _ = tiny_model
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    split = load_sft_data(data)['train'].select(range(3))
    whole, both = sft_tokens(tok, split, 100_000), sft_tokens(tok, split, 100_000, last=2)
    assert len(both) == 3 * len(whole)
    for i, m in enumerate(split['messages']):
        conv = sendable(json.loads(m))
        replies = [k for k, x in enumerate(conv) if x['role'] == 'assistant'][-2:]
        for j, k in enumerate(replies):
            row = both[3 * i + 1 + j]
            full = tok.apply_chat_template(conv[:k + 1], tools=openai_tools(), return_dict=True,
                                           return_assistant_tokens_mask=True)
            assert row['input_ids'] == full['input_ids']
            mask, everything = row['assistant_masks'], full['assistant_masks']
            runs = sum(1 for a, b in zip([0] + mask, mask) if b and not a)
            assert runs == 1 and all(e >= x for e, x in zip(everything, mask)) and sum(mask) < sum(everything)
            learned = tok.decode([t for t, y in zip(row['input_ids'], mask) if y])
            assert all(c['function']['arguments'] in learned for c in conv[k]['tool_calls'])


def test_accept_scores_count_the_teachers_offer_id(run, tiny_model, monkeypatch):
    "accept_moments holds the history before each accept; replies are scored by their accept call and its id."
    import bilateral.sft as sft
    model_dir, _ = tiny_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    with Store(run, create=False) as st:
        convs = [json.dumps(m[r]) for g in st.rows()['game_id'] if (m := st.messages(g)) for r in m]
    moments = sft.accept_moments({'messages': convs})
    assert moments and all(m['offer_id'][:1] in 'BS' and m['messages'][-1]['role'] != 'assistant' for m in moments)
    model, tok = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    sc = sft.accept_scores(model, tok, moments[:8])          # the real model, greedily
    assert sc['n'] == 8 and 0 <= sc['right_id'] <= sc['accepts'] <= 1
    call = '<tool_call>{{"name": "accept_offer", "arguments": {{"offer_id": "{}"}}}}</tool_call>'
    ids = [m['offer_id'] for m in moments[:4]]
    replies = [call.format(ids[0]), call.format('X9'), '<tool_call>{"name": "wait", "arguments": {}}</tool_call>',
               call.format(ids[3])]
    monkeypatch.setattr(sft, 'greedy_replies', lambda *a, **k: replies)
    assert sft.accept_scores(model, tok, moments[:4]) == {'n': 4, 'accepts': 0.75, 'right_id': 0.5}
