"""Sweep the tiny base model's settings on the chain's world (`dollars`), with the first-offer curve of each run.

    python tools/sweep_tiny.py NAME key=value ...   (keys: agents, first, games, epochs, lr, hidden, layers, batch,
                                                     whole, every, threads)

Each run builds a base as `train_sft.ipynb` does and writes data/sweeps/tiny-base/NAME.json: its settings, the build's
report and, every `every` steps, the training loss and the first-offer scores per role on 30 fresh scenarios where
boulware or linear (the chain's teachers) open against the ladder. `nbs/09b_sft.ipynb` draws the curves."""
import json, sys, time
from pathlib import Path
import transformers
from bilateral.play import play
from bilateral.protocol import Rules
from bilateral.scenarios import sample_scenarios
from bilateral.sft import build_tiny_model, first_situations, offer_curve
from bilateral.strategies import LADDER

def situations(n: int = 30, seed: int = 7919) -> list:
    "The first-reply situations of the teachers, each in both roles, on `n` fresh `dollars` scenarios."
    out = []
    for i, sc in enumerate(sample_scenarios(n, 'dollars', seed)):
        me, other = f"narrated:{('boulware', 'linear')[i % 2]}", f'narrated:{LADDER[i % len(LADDER)]}'
        rules = Rules(first_mover=('buyer', 'seller')[i % 2])
        for role, pair in (('buyer', (me, other)), ('seller', (other, me))):
            out += [s for s in first_situations([play(sc, *pair, rules, seed=i)]) if s['role'] == role]
    return out

def main(name: str, **a):
    transformers.logging.set_verbosity_error()
    cb, t0 = offer_curve(situations(), int(a.get('every', 100))), time.time()
    rep = build_tiny_model(f'/tmp/sweep-{name}', n_games=int(a.get('games', 600)), window=None,
                           first=int(a.get('first', 3)), whole=float(a.get('whole', 0.1)),
                           epochs=float(a.get('epochs', 1)), lr=float(a.get('lr', 3e-3)),
                           hidden=int(a.get('hidden', 128)), layers=int(a.get('layers', 4)), preset='dollars',
                           agents=a.get('agents', 'conceder,accommodating').split(','), first_mover='alternate',
                           max_length=4096, batch=int(a.get('batch', 4)), callbacks=[cb],
                           threads=int(a.get('threads', 1)))
    out = Path(__file__).resolve().parents[1] / 'data' / 'sweeps' / 'tiny-base' / f'{name}.json'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({'name': name, 'settings': a, 'report': rep, 'curve': cb.rows,
                               'seconds': round(time.time() - t0, 1)}, indent=1) + '\n')
    print(out)

if __name__ == '__main__':
    main(sys.argv[1], **dict(x.split('=', 1) for x in sys.argv[2:]))
