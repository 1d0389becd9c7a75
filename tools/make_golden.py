"""Regenerate the golden transcripts in data/golden/ (only after an intended change of the game's semantics)."""
from pathlib import Path
from bilateral.play import play
from bilateral.core import dumps
from bilateral.scenarios import sample_scenarios
import bilateral.strategies

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = [('boulware', 'conceder', 'symmetric', 7), ('hardliner', 'accommodating', 'mixed', 8),
          ('tit-for-tat', 'split', 'symmetric', 9), ('random:0.4', 'linear', 'symmetric', 10),
          ('conceder', 'hardliner', 'no-zopa', 11), ('haggler', 'boulware', 'list-high', 12)]

def golden_game(buyer, seller, preset, seed):
    "The game a golden file records."
    return play(sample_scenarios(1, preset, seed)[0], buyer, seller, seed=seed)

def name(buyer, seller, preset, seed):
    "The golden file's name: the two agent specs (`:` made `-`), the preset and the seed."
    return f"{buyer.replace(':', '-')}__{seller.replace(':', '-')}__{preset}__{seed}.json"

if __name__ == '__main__':
    out = ROOT / 'data' / 'golden'
    out.mkdir(parents=True, exist_ok=True)
    for spec in GOLDEN:
        (out / name(*spec)).write_text(dumps(golden_game(*spec).transcript) + '\n')
        print('wrote', name(*spec))
