"One reader of agent specs: `parse_spec` gives the typed `AgentSpec` that every consumer reads."
import dataclasses, pickle, subprocess, sys
from pathlib import Path
import pytest
from bilateral.agents import (AgentSpec, REGISTERED_BY, REGISTRY, agent_kind, check_spec, display_name,
                              load_agent_kinds, make_agent, parse_spec)
from bilateral.core import ConfigError
from bilateral.strategies import LADDER

load_agent_kinds()
# every plug-in loaded: `bilateral.probes` adds `probe` and `probe_every` to the language-model seats
HF = 'max_new_tokens, temperature, batch, window, max_turns, cache, cache_mb, threads, max_wall_s, probe, probe_every'
OPENAI = ('temperature, top_p, max_tokens, seed, reasoning_effort, tool_choice, key_env, concurrency, timeout, '
          'retries, cache, max_turns, max_game_tokens, max_wall_s, window, max_reply_bytes, max_request_bytes, http, '
          'probe, probe_every')

# One spec of every kind, with what it reads to.
GOOD = [
    ('boulware', 'boulware', None, {}, ()),
    ('random:0.3', 'random', '0.3', {}, ()),
    ('haggler:2.5', 'haggler', '2.5', {}, ()),
    ('narrated:conceder', 'narrated', 'conceder', {}, ()),
    ('human', 'human', None, {}, ()),
    ('hf:data/tiny?window=4&temperature=0.5', 'hf', 'data/tiny', {'window': 4, 'temperature': 0.5}, ()),
    ('openai:gpt-4.1-mini', 'openai', 'gpt-4.1-mini', {}, (None,)),
    ('openai:qwen3:8b@http://127.0.0.1:8001/v1|http://127.0.0.1:8002/v1?temperature=0.7&cache=off', 'openai',
     'qwen3:8b@http://127.0.0.1:8001/v1|http://127.0.0.1:8002/v1', {'temperature': 0.7, 'cache': 'off'},
     ('http://127.0.0.1:8001/v1', 'http://127.0.0.1:8002/v1')),
]

@pytest.mark.parametrize('text,kind,arg,options,endpoints', GOOD)
def test_each_kind_reads_to_its_parts_and_back(text, kind, arg, options, endpoints):
    s = parse_spec(text)
    assert (s.kind, s.arg, s.options, s.endpoints) == (kind, arg, options, endpoints)
    assert str(s) == s.text == text == check_spec(s)
    assert parse_spec(str(s)) == s and parse_spec(s) is s          # the round trip; a read spec is not read again
    assert pickle.loads(pickle.dumps(s)) == s                       # plain data: it travels to worker processes
    assert agent_kind(s) is REGISTRY[kind] and display_name(s) == display_name(text)

def test_every_kind_the_package_declares_has_a_spec_here():
    ours = {k for k, mods in REGISTERED_BY.items() if any(m.startswith('bilateral.') for m in mods)}
    assert {k for _, k, *_ in GOOD} >= ours - set(LADDER) | {'boulware', 'haggler'}

def test_make_agent_reads_the_spec_once(monkeypatch):
    "The factory gets the parsed argument and typed options, and the agent is named by the text as written."
    seen = []
    spy = lambda arg, **o: seen.append((arg, o)) or make_agent('boulware')
    monkeypatch.setitem(REGISTRY, 'hf', dataclasses.replace(REGISTRY['hf'], factory=spy))
    a = make_agent('hf:m?window=4')
    assert seen == [('m', {'window': 4})] and a.name == 'hf:m?window=4'

def test_split_only_cuts():
    s = AgentSpec.split('nobody:x?y=1')       # no kind is looked up
    assert (s.kind, s.arg, s.query, s.options, s.endpoints) == ('nobody', 'x', 'y=1', None, ())
    assert (AgentSpec.split('boulware:').arg, AgentSpec.split('boulware').query) == (None, None)

# Every message as it was before the parser was one (captured from the code of main at 114cd7b).
BAD = {
    'grandmaster': "unknown agent 'grandmaster'; known: ",     # then every kind registered in this process
    'boulware:fast': "agent boulware takes no argument, got 'boulware:fast'; spec: boulware",
    'hf': f"agent hf needs an argument: hf:PATH[?{'&'.join(k + '=..' for k in HF.split(', '))}]",
    'boulware?x=1': "agent boulware takes no options, got 'boulware?x=1'",
    'random:often': "option RATE='often' is not allowed: RATE must be a finite number in [0, 1]",
    'random:2': 'option RATE=2.0 is not allowed: RATE must be a finite number in [0, 1]',
    'random:nan': 'option RATE=nan is not allowed: RATE must be a finite number in [0, 1]',
    'hf:x?windw=4': f"unknown option 'windw' in agent spec 'hf:x?windw=4'; options: {HF}",
    'hf:x?window=0': 'option window=0 is not allowed: window must be a whole number in [1, 1000000]',
    'hf:x?batch=big': "option batch='big' is not allowed: batch must be a whole number in [1, 1024]",
    'openai:m?temprature=1': f"unknown option 'temprature' in agent spec 'openai:m?temprature=1'; options: {OPENAI}",
    'openai:m?temperature=3': 'option temperature=3.0 is not allowed: temperature must be a finite number in [0, 2]',
    'openai:m?cache=maybe': "option cache='maybe' is not allowed: cache must be one of on, off",
    'openai:@http://x': 'an openai agent needs a model: openai:MODEL[@BASE_URL][?options]',
    'openai:m@ftp://x': "base URL must start with http:// or https://, got 'ftp://x'",
    'openai:m@http://a/v1|http://a/v1': "a replica is listed twice in 'http://a/v1|http://a/v1'",
    'openai:m@http://a:99999/v1': "base URL 'http://a:99999/v1' has a bad port",
    'haggler:-1': 'option STEP=-1.0 is not allowed: STEP must be a finite number in [0.01, 1000000]',
    'human:x': "agent human takes no argument, got 'human:x'; spec: human",
    'narrated:linear?x=1': "agent narrated takes no options, got 'narrated:linear?x=1'",
}

@pytest.mark.parametrize('spec', BAD)
def test_bad_specs_give_the_same_messages(spec):
    for f in (parse_spec, make_agent, check_spec):     # check_spec now checks the servers too, as make_agent did
        with pytest.raises(ConfigError) as e: f(spec)
        assert str(e.value).startswith(BAD[spec]), (f.__name__, str(e.value))

@pytest.mark.parametrize('spec', ['hf:x?windw=4', 'openai:m@ftp://x', 'random:often'])
def test_bad_specs_are_one_line_and_exit_2_at_the_command_line(spec):
    exe = str(Path(sys.executable).parent / 'bilateral')
    r = subprocess.run([exe, 'run', '--buyer', spec, '--seller', 'linear'], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == f'bilateral: error: {BAD[spec]}', r.stderr
