"""GRPO: one conversation format for tournaments and training, and a real LoRA run of TRL's GRPOTrainer."""
import copy, json, os, subprocess, sys
from dataclasses import replace
from pathlib import Path
import pytest
from bilateral.core import Role
from bilateral.engine import replay, scenario_from_json
from bilateral.grpo import REWARDS, CARRIER, BargainEnv, Rewards, grpo_rows, grpo_tokenizer, reward_parts, tool_method
from bilateral.play import play
from bilateral.protocol import TOOLS, Rules, openai_tools
from bilateral.store import Store
import bilateral.strategies

trl = pytest.importorskip('trl')
EXE = str(Path(sys.executable).parent / 'bilateral')   # the console script


def drive(env: BargainEnv, conv: list):
    "Make the calls of a recorded conversation's replies through the environment, as TRL makes them."
    for m in conv[2:]:
        if m['role'] != 'assistant': continue
        results = [getattr(env, c['function']['name'])(**{CARRIER: {'name': c['function']['name'],
                                                                    'arguments': c['function']['arguments']}})
                   for c in m['tool_calls']]
        [str(r) for r in results]


@pytest.mark.parametrize('role', ['buyer', 'seller'])
def test_environment_reproduces_play_call_for_call(role):
    "Scripted play through the environment equals `play()`: system prompt, opening, every tool message, the record."
    pairs = [('linear', 'boulware'), ('boulware', 'conceder'), ('hardliner', 'linear'), ('boulware', 'boulware')]
    rows = grpo_rows(9, role, seed=3)
    n = 0
    for row in rows:
        sc, rules = scenario_from_json(json.loads(row['scenario'])), replace(Rules(), first_mover=row['first_mover'])
        for me, opp in pairs:
            b, s = (f'narrated:{me}', opp) if role == 'buyer' else (opp, f'narrated:{me}')
            r = play(sc, b, s, rules, row['seed'])
            env = BargainEnv(opp, role)
            assert env.reset(**row) == r.messages[role][1]['content']
            drive(env, r.messages[role])
            assert env.eng.done
            assert env.messages == r.messages[role]
            assert env.eng.transcript(r.agents) == r.transcript
            n += 1
    assert n == 36


def test_schemas_are_the_tournaments():
    "The schemas TRL renders from the environment's methods are `openai_tools()`."
    from transformers.utils import get_json_schema
    env = BargainEnv()
    assert [get_json_schema(getattr(env, t['function']['name'])) for t in openai_tools()] == openai_tools()
    assert [get_json_schema(tool_method(TOOLS[n])) for n in sorted(TOOLS)] == openai_tools()


def test_a_bad_call_gets_the_engines_error_and_changes_nothing():
    env = BargainEnv('hardliner', 'buyer')
    env.reset(**grpo_rows(1, 'buyer')[0])
    before = env.eng.state()
    bad = [env.make_offer(price=-3.0), env.make_offer(price='12'), env.accept_offer(offer_id='S7'),
           env.make_offer(**{CARRIER: {'name': 'dance', 'arguments': '{}'}}),
           env.make_offer(**{CARRIER: {'name': 'make_offer', 'arguments': '{"price": 1'}}),
           env.send_message(text='x' * 100_000)]
    codes = [json.loads(str(r))['error'] for r in bad]
    assert codes == ['out_of_range', 'wrong_type', 'unknown_offer', 'unknown_tool', 'invalid_json', 'too_long']
    assert env.eng.state() == before
    assert env.eng.parties[Role.BUYER].invalid == 6


def test_spending_the_invalid_allowance_is_a_failed_game_not_a_cheap_one():
    """Spending the invalid-call allowance ends the game as `invalid_calls` by the model: `failed` is 1, and it costs
    more than the worst deal."""
    env = BargainEnv('boulware', 'seller')
    env.reset(**grpo_rows(4, 'both')[2])
    assert env.role is Role.SELLER
    for _ in range(env.rules.max_invalid + 1): str(env.make_offer(price=-1.0))
    assert env.eng.done and env.eng.outcome.reason.value == 'invalid_calls' and env.eng.outcome.by is Role.SELLER
    parts = reward_parts(env)
    assert (parts['failed'], parts['deal'], parts['invalid']) == (1.0, 0.0, env.rules.max_invalid + 1)
    w = REWARDS['share-invalid-failed']
    old = REWARDS['share-invalid']
    assert sum(w[k] * parts[k] for k in w) < -1 < sum(old[k] * parts[k] for k in old)


def test_the_tiny_config_caps_each_reply_for_trl_as_a_tournament_does(tmp_path):
    "TRL generates each reply of a rollout under the `hf:` agent's cap, not up to the whole completion budget."
    from bilateral.grpo import GRPO_CONFIGS, _grpo_args
    args = _grpo_args(GRPO_CONFIGS['tiny'], tmp_path, [1.0], 0, False)
    assert args.generation_kwargs == {'max_new_tokens': 96} and args.max_completion_length == 4096
    assert _grpo_args(GRPO_CONFIGS['qwen3-8b'], tmp_path, [1.0], 0, False).generation_kwargs is None


@pytest.fixture(scope='module')
def grpo_run(tiny_model, tmp_path_factory):
    """Three GRPO steps with LoRA on the tiny model, recording each rollout's conversation (environments are pooled and
    reused, so a copy), prompt and completion ids."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    path, _ = tiny_model
    out = tmp_path_factory.mktemp('grpo')
    seen = []
    def record(environments, completions, completion_ids, prompts, **kw):
        seen.extend((copy.deepcopy(e.messages), p, c) for e, p, c in zip(environments, prompts, completion_ids))
        return [0.0] * len(environments)
    rewards = Rewards('share', Store(out / 'rollouts'))
    tok = grpo_tokenizer(path)
    args = GRPOConfig(output_dir=str(out / 'trainer'), per_device_train_batch_size=4, num_generations=4, max_steps=3,
                      max_completion_length=4096, use_cpu=True, bf16=False, report_to='none', logging_steps=1,
                      save_strategy='no', disable_tqdm=True, reward_weights=[1.0, 0.0])
    torch.set_num_threads(1)
    tr = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path), args=args, processing_class=tok,
                     train_dataset=Dataset.from_list(grpo_rows(3, 'buyer', seed=5)),
                     reward_funcs=rewards.funcs() + [record],
                     environment_factory=lambda: BargainEnv('boulware', 'buyer'),
                     peft_config=LoraConfig(r=8, lora_alpha=16, target_modules='all-linear', task_type='CAUSAL_LM'))
    tr.train()
    return tr, tok, seen, rewards, out


def _trainer_ids(tr, prompt: list) -> list:
    "The token ids of a prompt as the trainer renders it for generation (one environment, so one tool list)."
    tr._batch_environments = [None]
    return tr._tokenize_prompts([prompt])[0][0]


def _tournament_text(tok, messages: list) -> str:
    "The text an `hf:` agent gives its model before a reply: the conversation so far, rendered with the tools."
    return tok.apply_chat_template(messages, tools=openai_tools(), add_generation_prompt=True, tokenize=False)


def test_grpo_logs_rewards_with_lora(grpo_run):
    tr, _, seen, rewards, out = grpo_run
    logs = [h for h in tr.state.log_history if 'reward' in h]
    assert len(logs) == 3 and all('rewards/share/mean' in h and 'deal_rate' in h for h in logs)
    assert all(-1 <= h['rewards/share/mean'] <= 1 for h in logs)
    assert any('lora_' in n for n, _ in tr.model.named_parameters())
    assert rewards.n == len(seen) == 12


def test_trainer_prompt_is_the_tournaments(grpo_run):
    "The prompt the trainer tokenizes for every rollout is what an `hf:` agent sends its model at the first reply."
    tr, tok, seen, _, _ = grpo_run
    for msgs, prompt, _ in seen:
        ids = _trainer_ids(tr, prompt)
        assert ids == tok(_tournament_text(tok, msgs[:2]), add_special_tokens=False)['input_ids']


def test_every_reply_had_the_tournaments_context(grpo_run):
    """Before each reply the model saw in training the text a tournament shows it: each reply's tournament context is
    a prefix of the rollout's text, up to the first reply the model wrote otherwise than the tournament renders it
    (spacing, key order: TRL keeps the model's own tokens where a tournament renders the parsed calls)."""
    tr, tok, seen, _, _ = grpo_run
    whole = 0
    for msgs, prompt, completion in seen:
        text = tok.decode(_trainer_ids(tr, prompt) + completion)
        replies = [i for i, m in enumerate(msgs) if m['role'] == 'assistant' and m.get('tool_calls')]
        assert replies and text.startswith(_tournament_text(tok, msgs[:replies[0]]))
        for prev, i in zip(replies, replies[1:]):
            if text.startswith(_tournament_text(tok, msgs[:i])): continue
            ctx = _tournament_text(tok, msgs[:prev])
            written = text[len(ctx):].split('<|im_end|>')[0]
            rendered = _tournament_text(tok, msgs[:prev + 1])[len(ctx):].split('<|im_end|>')[0]
            assert written != rendered
            break
        else: whole += 1
    assert whole >= 1


def test_rollouts_are_stored_games(grpo_run):
    "Every rollout is a game in the run's store, whose record replays, with the model's conversation."
    _, _, seen, _, out = grpo_run
    st = Store(out / 'rollouts')
    assert st.count() == 12
    for gid, t in st.transcripts():
        assert replay(t).outcome.reason.value == t['outcome']['reason']
        assert st.messages(gid)['buyer'][0]['role'] == 'system'



def test_train_grpo_from_the_command_line_then_report(tiny_model, tmp_path):
    "`bilateral train grpo` on the tiny model prints its report; `bilateral report` reads its rollouts."
    path, _ = tiny_model
    out = tmp_path / 'grpo'
    env = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    r = subprocess.run([EXE, 'train', 'grpo', str(path), '--out', str(out),
                        '--opponent', 'boulware', '--role', 'buyer', '--max-steps', '2', '--scenarios', '2',
                        '--preset', 'dollars', '--deadline', '60'],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads(r.stdout)
    assert (rep['steps'], rep['rollouts'], rep['opponent'], rep['role']) == (2, 16, 'boulware', 'buyer')
    assert rep['config']['preset'] == 'dollars' and rep['config']['deadline'] == 60 and 'trend' in rep
    with Store(out / 'rollouts', create=False) as st:
        assert {t['rules']['deadline'] for _, t in st.transcripts()} == {60.0}
        assert all('At 60 seconds' in st.messages(g)['buyer'][0]['content'] for g, _ in st.transcripts())
    assert (out / 'model' / 'config.json').exists()
    r = subprocess.run([EXE, 'report', str(out / 'rollouts')],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'policy' in r.stdout and 'boulware' in r.stdout
