"""Every reply of the teacher's SFT conversations and of SFT models' evaluation games, sorted by what it does: its
first offer, a new price, the same price as its previous offer, an acceptance, or other (`06f_models`, the
`sft_replies` record of `data/smollm2/chain.json`).

    python tools/reply_kinds.py SFT_DATA_DIR LABEL=RUNS_DIR [LABEL=RUNS_DIR ...]
    python tools/reply_kinds.py --dagger DAGGER_DATA_DIR

RUNS_DIR is an evaluation's `runs/MODEL` folder (one store per opponent); the model is the `hf:` agent of each game.
With `--dagger`, the turns of a DAgger round's data (`09d_dagger`, its `dagger` record in `chain.json`): what the
student did against what the teacher's label says, each sorted the same way from the student's own previous price."""
import json, sys
from collections import Counter
from pathlib import Path

KINDS = ('first offer', 'new price', 'same price', 'accept', 'other')

def kinds_of(replies: list) -> list[str]:
    "Each reply's kind, a reply being its calls as (tool name, arguments dict) pairs, in order."
    last, out = None, []
    for calls in replies:
        if any(n == 'accept_offer' for n, _ in calls):
            out.append('accept')
            continue
        p = next((a.get('price') for n, a in calls if n == 'make_offer' and isinstance(a, dict)), None)
        if not isinstance(p, (int, float)):
            out.append('other')
            continue
        out.append('first offer' if last is None else 'same price' if abs(p - last) < 1e-9 else 'new price')
        last = p
    return out

def _args(a):
    try: return json.loads(a) if isinstance(a, str) else a
    except ValueError: return None

def teacher(data_dir) -> list[list[str]]:
    "The kinds of the teacher's replies, conversation by conversation, in the train split of an SFT data folder."
    from bilateral.chat import sendable
    from bilateral.sft import load_sft_data
    return [kinds_of([[(c['function']['name'], _args(c['function']['arguments'])) for c in x.get('tool_calls') or []]
                      for x in sendable(json.loads(m)) if x['role'] == 'assistant'])
            for m in load_sft_data(data_dir)['train']['messages']]

def model(runs_dir) -> list[list[str]]:
    "The kinds of the `hf:` agent's replies (one per batch of calls), game by game, in an evaluation's model folder."
    from bilateral.store import Store
    out = []
    for d in sorted(Path(runs_dir).glob('*')):
        with Store(d, create=False) as st:
            for _, t in st.transcripts():
                me, batches = 'buyer' if t['agents']['buyer'].startswith('hf:') else 'seller', {}
                for e in t['log']:
                    if e.get('role') == me and 'tool' in e:
                        batches.setdefault(e['batch'], []).append((e['tool'], _args(e['arguments'])))
                out.append(kinds_of([batches[b] for b in sorted(batches)]))
    return out

def dagger_turns(samples: list) -> Counter:
    """(student's kind, teacher's kind) of every turn but each game's last, from DAgger samples in their order: each
    is a game's history up to a turn, then the teacher's label; a game's last sample holds the student's replies."""
    from bilateral.dagger import _calls     # a message's calls as (name, arguments), as the round compared them
    games, out = {}, Counter()
    for gid, conv in samples: games.setdefault(gid, []).append(conv)
    for convs in games.values():
        mine = [_calls(m) for m in convs[-1][:-1] if m['role'] == 'assistant']
        did = kinds_of(mine)
        for k, conv in enumerate(convs[:len(mine)]):
            if sum(m['role'] == 'assistant' for m in conv[:-1]) != k: break   # a turn without a reply: stop there
            out[(did[k], kinds_of(mine[:k] + [_calls(conv[-1])])[k])] += 1
    return out

def counts(convs: list[list[str]]) -> dict:
    c = Counter(k for conv in convs for k in conv)
    return {'conversations': len(convs), 'replies': sum(c.values()), **{k: c[k] for k in KINDS}}

if __name__ == '__main__':
    if len(sys.argv) < 2: sys.exit(__doc__)
    if sys.argv[1] == '--dagger':
        from bilateral.sft import load_sft_data
        d = load_sft_data(sys.argv[2])['train']
        turns = dagger_turns([(g, json.loads(m)) for g, m in zip(d['game_id'], d['messages'])])
        print(json.dumps({s: {t: turns[(s, t)] for t in KINDS} for s in KINDS}, indent=1))
        sys.exit(0)
    out = {'teacher (SFT data, train split)': counts(teacher(sys.argv[1]))}
    for arg in sys.argv[2:]:
        label, _, path = arg.partition('=')
        out[label] = counts(model(path))
    print(json.dumps(out, indent=1))
