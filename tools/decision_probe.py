"""What SFT models put on the teacher's choice at each of its held-out replies after the first, teacher-forced
(`06f_models`, the `decision_probe` record of `data/smollm2/chain.json`).

    python tools/decision_probe.py SFT_DATA_DIR LABEL=MODEL_DIR [LABEL=MODEL_DIR ...] [--threads=2] [--conversations=N]
    python tools/decision_probe.py DAGGER_DIR LABEL=MODEL_DIR [...] --labels=N       # a DAgger round's labels

Each held-out (test split) conversation is read by the model once, in the training rendering. At every teacher reply
after its first, the model's probabilities at two tokens are read:
- the tool name (`make` or `accept`): where the teacher accepted, does the model put more on `accept` than on `make`;
  where it made an offer, does it (wrongly) put more on `accept`;
- where the teacher named a new price: at the first character where that price differs from its previous one, the
  teacher's digit against the previous price's digit (the copy). Prices are single-character tokens here.
Conversations longer than 4,096 tokens (the training cut) are left out; `--conversations=N` reads the first N only
(a read costs about 10 s a conversation on 2 cores).

`--labels=N` reads a DAgger round's data (`09d_dagger`: each conversation is the student's own game, its last reply
the teacher's label) and probes that last reply only, on N conversations of each label kind (accept, new price, same
price; a seeded draw): the same two decisions, at the histories the model itself wrote."""
import json, sys, time

def spans(mask: list) -> list[tuple]:
    "The (start, end) of each run of ones in an assistant mask: one per assistant message."
    out, i = [], 0
    while i < len(mask):
        j = i
        while j < len(mask) and mask[j]: j += 1
        if j > i: out.append((i, j))
        i = max(j, i + 1)
    return out

def _price(msg: dict):
    call = msg['tool_calls'][0]['function']
    return call['arguments'].split(':', 1)[1].strip(' }') if call['name'] == 'make_offer' else None

def label_kind(conv: list) -> str | None:
    "The kind of a conversation's last reply (not its first) as `reply_kinds` sorts it: accept, new, same or None."
    from bilateral.dagger import _calls
    from reply_kinds import kinds_of
    replies = [_calls(x) for x in conv if x['role'] == 'assistant']
    kind = kinds_of(replies)[-1] if len(replies) > 1 else None
    return {'accept': 'accept', 'new price': 'new', 'same price': 'same'}.get(kind)

def pick_labels(split, n: int, seed: int = 0) -> list[int]:
    "The indices of `n` conversations of each last-reply kind (accept, new, same), in a seeded draw."
    import random
    by, rng = {'accept': [], 'new': [], 'same': []}, random.Random(seed)
    for i, m in enumerate(split['messages']): by.get(label_kind(json.loads(m)), []).append(i)
    return sorted(i for xs in by.values() for i in rng.sample(xs, min(n, len(xs))))

def rows(model, tok, split, max_length: int = 4096, last_only: bool = False) -> list[dict]:
    """One row per teacher reply after the first: its kind and the model's probabilities at the decision tokens.
    `last_only`: each conversation's last reply alone (a DAgger label)."""
    import torch
    from bilateral.chat import sendable
    from bilateral.sft import training_template
    tmpl, out = training_template(tok), []
    name_id = {w: tok.convert_tokens_to_ids(w) for w in ('make', 'accept')}
    for n, (m, t) in enumerate(zip(split['messages'], split['tools'])):
        conv = sendable(json.loads(m))
        enc = tok.apply_chat_template(conv, tools=json.loads(t), chat_template=tmpl, return_dict=True,
                                      return_assistant_tokens_mask=True)
        ids = enc['input_ids']
        if len(ids) > max_length: continue
        with torch.no_grad(): lp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
        replies, prev = [x for x in conv if x['role'] == 'assistant'], None
        for k, (msg, (a, b)) in enumerate(zip(replies, spans(enc['assistant_masks']), strict=True)):
            call = msg['tool_calls'][0]['function']
            toks = tok.convert_ids_to_tokens(ids[a:b])
            pos = a + next(i for i, x in enumerate(toks) if x in name_id)
            row = {'conversation': n, 'reply': k, 'tool': call['name'],
                   **{f'p_{w}': float(lp[pos - 1, i].exp()) for w, i in name_id.items()}}
            price = _price(msg)
            if k and call['name'] == 'accept_offer': row['kind'] = 'accept'
            elif k and prev is not None:
                row['kind'] = 'same' if float(price) == float(prev) else 'new'
                c = next((i for i, (x, y) in enumerate(zip(price, prev)) if x != y), None)
                if row['kind'] == 'new' and c is not None:
                    at = a + toks.index('price') + 3 + c         # after `price`, `":` and a space come the characters
                    assert tok.convert_ids_to_tokens(ids[at]) == price[c], (price, c)
                    row['p_teacher'] = float(lp[at - 1, ids[at]].exp())
                    row['p_copy'] = float(lp[at - 1, tok.convert_tokens_to_ids(prev[c])].exp())
            if k and (not last_only or k == len(replies) - 1): out.append(row)
            if price is not None: prev = price
    return out

def summary(rs: list[dict]) -> dict:
    "The probe's shares and mean probabilities over a model's rows."
    def mean(xs): return round(sum(xs) / len(xs), 3) if xs else None
    acc = [r for r in rs if r.get('kind') == 'accept']
    offers = [r for r in rs if r.get('kind') in ('new', 'same')]
    new = [r for r in rs if 'p_teacher' in r]
    return {'conversations': len({r['conversation'] for r in rs}), 'replies': len(rs),
            'accept moments': len(acc), 'p(accept) there': mean([r['p_accept'] for r in acc]),
            'accept > make there': mean([r['p_accept'] > r['p_make'] for r in acc]),
            'offer moments': len(offers), 'p(accept) at offers': mean([r['p_accept'] for r in offers]),
            'accept > make at offers': mean([r['p_accept'] > r['p_make'] for r in offers]),
            'new-price moments': len(new), "p(teacher's digit)": mean([r['p_teacher'] for r in new]),
            'p(copied digit)': mean([r['p_copy'] for r in new]),
            'copy > teacher': mean([r['p_copy'] > r['p_teacher'] for r in new])}

if __name__ == '__main__':
    opts = dict(a[2:].split('=', 1) for a in sys.argv[1:] if a.startswith('--') and '=' in a)
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) < 2 or set(opts) - {'threads', 'conversations', 'labels'}: sys.exit(__doc__)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from bilateral.sft import load_sft_data
    torch.set_num_threads(int(opts.get('threads', 2)))
    labels = 'labels' in opts
    split, out = load_sft_data(args[0])['train' if labels else 'test'], {}
    if labels: split = split.select(pick_labels(split, int(opts['labels'])))
    if 'conversations' in opts: split = split.select(range(min(len(split), int(opts['conversations']))))
    for arg in args[1:]:
        label, _, path = arg.partition('=')
        t0 = time.time()
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        out[label] = {**summary(rows(model, tok, split, last_only=labels)), 'seconds': round(time.time() - t0)}
        print(label, json.dumps(out[label]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))
