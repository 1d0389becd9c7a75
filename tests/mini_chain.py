"""The training chain in miniature, for the determinism tests: a tiny base, LoRA SFT on a teacher's games, GRPO, one
greedy game of the GRPO model, and an evaluation of it (8 games, all at a time, so its generation is batched across
games). Prints one JSON line: a hash of each stage's result.

    python tests/mini_chain.py OUT_DIR THREADS"""
import hashlib, json, os, sys
from pathlib import Path

def weights(folder) -> str:
    "A hash of a saved model's tensors (names and bytes)."
    from safetensors.torch import load_file
    sd = load_file(Path(folder) / 'model.safetensors')
    return hashlib.sha256(b''.join(k.encode() + sd[k].numpy().tobytes() for k in sorted(sd))).hexdigest()[:16]

def text(s: str) -> str: return hashlib.sha256(s.encode()).hexdigest()[:16]

def game_text(transcript: dict, out: Path) -> str:
    "A stored game without what is not the game's: its model's seconds on the wall clock, and the folder of the run."
    from bilateral.core import dumps
    t = json.loads(dumps(transcript))
    for info in t.get('agent_info', {}).values(): info.pop('latency_s', None)
    return dumps(t).replace(str(out), 'OUT')

def main(out: str, threads: str):
    import torch
    from bilateral.core import dumps
    from bilateral.evaluate import eval_runs, evaluate
    from bilateral.grpo import train_grpo
    from bilateral.play import play
    from bilateral.protocol import Rules
    from bilateral.scenarios import sample_scenarios
    from bilateral.sft import build_tiny_model, sft_data, train_lora_sft
    from bilateral.store import Store
    from bilateral.tournament import TournamentSpec, run_tournament
    out, threads = Path(out).resolve(), int(threads)
    torch.set_num_threads(threads)
    world = dict(preset='dollars', deadline=60.0)
    build_tiny_model(out / 'base', n_games=8, max_steps=6, threads=threads, first=3, window=None, **world)
    spec = TournamentSpec(('narrated:boulware', 'narrated:conceder'), 6, 'dollars', seed=1, rules=Rules(deadline=60.0))
    run_tournament(spec, out / 'teacher', progress=False, workers=1)
    sft_data(out / 'teacher', out / 'sft-data', deal=True)
    train_lora_sft(out / 'base', out / 'sft-data', out / 'sft', max_steps=4, threads=threads)
    train_grpo(out / 'sft', out / 'grpo', opponent='conceder', role='buyer', reward='share-invalid-failed', max_steps=2,
               scenarios=2, threads=threads, **world)
    with Store(out / 'grpo' / 'rollouts', create=False) as st: rollouts = sorted(dumps(t) for _, t in st.transcripts())
    os.chdir(out)      # the agent's name is its spec, so the same relative path in every run; `threads=0`: torch's own
    game = play(sample_scenarios(1, 'dollars', seed=3)[0], 'hf:grpo/model?threads=0', 'conceder', Rules(deadline=60.0),
                seed=3)
    models = {'grpo': f"hf:{out / 'grpo' / 'model'}?threads=0"}
    evaluate(models, ['conceder'], ['linear'], out / 'eval', games_per_pair=2, concurrency=8, n_boot=10, figures=False,
             **world)
    games = []
    for r in eval_runs(models, ['conceder'], ['linear'], out / 'eval'):
        with Store(r['run_dir'], create=False) as st: games += [game_text(t, out) for _, t in st.transcripts()]
    print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(), 'base': weights(out / 'base'),
                      'sft': weights(out / 'sft'), 'grpo': weights(out / 'grpo' / 'model'),
                      'rollouts': text('\n'.join(rollouts)), 'game': text(game_text(game.transcript, out)),
                      'evaluation': text('\n'.join(sorted(games)))}))

if __name__ == '__main__':
    main(*sys.argv[1:])
