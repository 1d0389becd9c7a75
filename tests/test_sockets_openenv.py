"""The OpenEnv socket against a real server in a subprocess on 127.0.0.1: honoured seeds, concurrent sessions whose
games equal `play()`'s through the package's own `openai:` agent, bad actions answered with error codes, a cap on
sessions, and TRL's environment_factory class playing the same game as the package's own `BargainEnv`."""
import asyncio, json, signal, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest
pytest.importorskip('openenv')
from bilateral.openenv import BargainAction, BargainClient, OpenEnvBargain, serve_openenv
from bilateral.protocol import Rules
from bilateral.play import play
from bilateral.scenarios import sample_scenarios
from bilateral.fakeserver import free_port
from conftest import child

@pytest.fixture(scope='module')
def env_srv():
    with serve_openenv('--opponent', 'boulware', '--also', 'linear', '--max-sessions', '8') as s: yield s

def test_seeded_reset_gives_the_same_opening(env_srv):
    with BargainClient(base_url=env_srv.url).sync() as a, BargainClient(base_url=env_srv.url).sync() as b:
        one, two = a.reset(seed=42).observation, b.reset(seed=42).observation
        again = a.reset(seed=42).observation
        other = a.reset(seed=43).observation
    assert one.messages == two.messages == again.messages
    assert one.messages != other.messages
    assert [m['role'] for m in one.messages] == ['system', 'user'] and one.tools

async def _game(url: str, model_url: str, seed: int, role: str, first_mover: str):
    "One game over its own WebSocket session, the model's replies from the fake endpoint: (conversation, result)."
    import openai
    llm = openai.AsyncOpenAI(base_url=model_url, api_key='none', max_retries=0)
    async with BargainClient(base_url=url) as c:
        res = await c.reset(seed=seed, role=role, first_mover=first_mover)
        convo, tools = list(res.observation.messages), res.observation.tools
        while not res.done:
            r = await llm.chat.completions.create(model='ok', messages=convo, tools=tools)
            m = r.choices[0].message
            calls = [{'name': t.function.name, 'arguments': t.function.arguments} for t in m.tool_calls or []]
            res = await c.step(BargainAction(content=m.content or '', tool_calls=calls))
            convo += res.observation.messages
    return convo, res

def test_sixteen_games_over_eight_sessions_equal_play(env_srv, srv):
    games = [(s, 'buyer' if s % 2 else 'seller', 'buyer' if s % 4 < 2 else 'seller') for s in range(100, 116)]
    async def all_games():
        sem = asyncio.Semaphore(8)
        async def one(g):
            async with sem: return await _game(env_srv.url, srv.url, *g)
        return await asyncio.gather(*(one(g) for g in games))
    got = asyncio.run(all_games())
    model = f'openai:ok@{srv.url}?cache=off'
    for (seed, role, mover), (convo, res) in zip(games, got):
        seats = {'buyer': 'boulware', 'seller': 'boulware', role: model}
        ref = play(sample_scenarios(1, seed=seed)[0], seats['buyer'], seats['seller'], Rules(first_mover=mover), seed)
        assert res.observation.outcome == ref.transcript['outcome']
        assert convo == ref.messages[role]
        assert res.observation.metadata['transcript']['log'] == ref.transcript['log']
    assert len({res.observation.outcome['price'] for _, res in got}) > 8      # sixteen different games

def test_bad_actions_get_error_codes_and_the_server_keeps_serving(env_srv):
    with BargainClient(base_url=env_srv.url).sync() as c:
        c.reset(seed=7)
        bad = [{'name': 'make_offer', 'arguments': '{"price": NaN}'}, {'name': 'make_offer', 'arguments': '{"price":'},
               {'name': None, 'arguments': '{}'}, {'name': 'send_message', 'arguments': {'text': 'x' * 50_000}},
               {'name': 'wait', 'arguments': '{"seconds": 1, "seconds": 2}'}, {'arguments': 12}]
        obs = c.step(BargainAction(tool_calls=bad)).observation
        codes = [json.loads(m['content'])['error'] for m in obs.messages if m['role'] == 'tool']
        assert codes == ['not_finite', 'invalid_json', 'unknown_tool', 'too_long', 'duplicate_key', 'unknown_tool']
        for payload in ({'tool_calls': [{}] * 65}, {'tool_calls': 'make_offer'}, {'content': 'x' * 200_000},
                        {'tool_calls': [], 'extra': 1}):
            with pytest.raises(RuntimeError, match='VALIDATION_ERROR'):
                c._run_sync(lambda: c._send_and_receive({'type': 'step', 'data': payload}))
        with pytest.raises(RuntimeError, match='not served here'): c.reset(seed=7, opponent='openai:gpt-4.1')
        res = c.reset(seed=7, opponent='linear')
        res = c.step(BargainAction(tool_calls=[{'name': 'quit_negotiation', 'arguments': '{}'}]))
        assert res.done and res.observation.outcome['reason'] == 'quit'
        assert c.step(BargainAction()).observation.error == 'game_over'

def test_sessions_are_capped(env_srv):
    clients = [BargainClient(base_url=env_srv.url).sync() for _ in range(9)]
    try:
        for c in clients[:8]: c.reset(seed=1)
        with pytest.raises(Exception, match='CAPACITY_REACHED|capacity'): clients[8].reset(seed=1)
    finally:
        for c in clients:
            try: c.close()
            except Exception: pass
    with BargainClient(base_url=env_srv.url).sync() as c: assert not c.reset(seed=1).done   # room again

def test_trl_environment_class_plays_as_bargain_env(env_srv):
    from bilateral.grpo import BargainEnv, grpo_rows
    def as_trl(env, row, replies):
        env.reset(**row)
        out = []
        for reply in replies: out += [str(r) for r in [getattr(env, n)(**a) for n, a in reply]]
        return out
    replies = [[('make_offer', {'price': 20.0}), ('wait_for_response', {})], [('wait', {'seconds': 5.0})],
               [('make_offer', {'price': 22.5, 'note': 'last'}), ('wait_for_response', {})],
               [('accept_offer', {'offer_id': 'S3'})], [('quit_negotiation', {})]]
    for row in grpo_rows(3, seed=5):
        remote = OpenEnvBargain(env_srv.url)
        try: got = as_trl(remote, row, replies)
        finally: remote.client.close()
        local = BargainEnv('boulware')
        assert got == as_trl(local, row, replies)
        assert remote.done == local.eng.done

def test_grpo_trainer_through_the_openenv_server(env_srv, tiny_model, tmp_path):
    "TRL's GRPOTrainer, its environments `OpenEnvBargain` clients of the server, as TRL's OpenEnv guide wires one."
    from functools import partial
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    from bilateral.engine import replay
    from bilateral.grpo import grpo_rows, grpo_tokenizer
    from bilateral.openenv import openenv_reward
    path, _ = tiny_model
    envs = []
    def factory():
        envs.append(OpenEnvBargain(env_srv.url))
        return envs[-1]
    args = GRPOConfig(output_dir=str(tmp_path / 'trainer'), per_device_train_batch_size=4, num_generations=4,
                      max_steps=2, max_completion_length=2048, use_cpu=True, bf16=False, report_to='none',
                      logging_steps=1, save_strategy='no', disable_tqdm=True)
    torch.set_num_threads(1)
    tr = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path), args=args, processing_class=grpo_tokenizer(path),
                     train_dataset=Dataset.from_list(grpo_rows(2, 'buyer', seed=5)), reward_funcs=[openenv_reward],
                     environment_factory=factory,
                     peft_config=LoraConfig(r=8, lora_alpha=16, target_modules='all-linear', task_type='CAUSAL_LM'))
    tr.train()
    logs = [h for h in tr.state.log_history if 'reward' in h]
    assert len(logs) == 2 and envs
    for e in envs:
        assert e.messages[0]['role'] == 'system' and any(m['role'] == 'tool' for m in e.messages)
        e.client.close()

def test_the_server_says_where_it_listens_and_a_taken_port_is_one_line():
    "`bilateral-openenv` as installed: one line with its address once it listens; a second one on that port: exit 2."
    script, port = str(Path(sys.executable).parent / 'bilateral-openenv'), free_port()
    with child([script, '--port', str(port)]) as first:
        line = first.stdout.readline()          # printed once the port is taken, before the server runs
        assert line == f'bilateral-openenv: listening on http://127.0.0.1:{port} (opponent boulware); Ctrl-C stops it\n'
        second = subprocess.run([script, '--port', str(port)], capture_output=True, text=True, timeout=300)
        assert (second.returncode, second.stdout) == (2, ''), second.stderr
        assert second.stderr == (f'bilateral-openenv: error: cannot listen on 127.0.0.1:{port} (Address already in '
                                 'use): choose another --port\n')
        t0 = time.monotonic()
        while True:
            try:
                with urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=2) as r:
                    health = json.loads(r.read())
                break
            except OSError:
                assert time.monotonic() - t0 < 300, 'the server said it listens but never answered'
                time.sleep(0.2)
        assert health['status'] == 'healthy'
        first.terminate()
        assert first.wait(30) in (0, -signal.SIGTERM)

def test_belief_probes_asked_inside_the_game():
    """`bilateral-openenv --probe tool --probe-every 20`: the opening lists `report_belief`, the question comes in the
    observation's messages, the client's answer is recorded in the game's transcript; `--probe request` is refused."""
    bad = subprocess.run([str(Path(sys.executable).parent / 'bilateral-openenv'), '--probe', 'request'],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count('\n') == 1 and '--probe' in bad.stderr, bad.stderr
    with serve_openenv('--opponent', 'boulware', '--probe', 'tool', '--probe-every', '20') as s:
        with BargainClient(base_url=s.url).sync() as c:
            res = c.reset(seed=7, role='buyer')
            assert res.observation.tools[-1]['function']['name'] == 'report_belief'
            asked = 0
            for _ in range(200):
                if res.done: break
                last = res.observation.messages[-1] if res.observation.messages else {}
                if last.get('role') == 'user' and 'report_belief' in last.get('content', ''):
                    asked += 1
                    res = c.step(BargainAction(tool_calls=[{'name': 'report_belief', 'arguments': {'estimate': 50}}]))
                else: res = c.step(BargainAction(tool_calls=[{'name': 'wait', 'arguments': {'seconds': 10}}]))
    assert res.done and asked >= 2
    answers = res.observation.metadata['transcript']['agent_info']['buyer']['probes']['answers']
    assert len(answers) == asked and {a['estimate'] for a in answers} == {5000}
