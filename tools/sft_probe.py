"""First offers of a model folder on the held-out teacher conversations of an SFT data folder, by role: how
`06f_models` chose the SFT settings of the `smollm2` profile (`data/smollm2/sft_probe.json`).

    python tools/sft_probe.py MODEL_DIR SFT_DATA_DIR [--threads 2]

Each conversation's context before its first reply, when the teacher's first reply was an offer, is given to the model;
its greedy reply's first price is scored against the listing price and the teacher's (`first_offer_scores`)."""
import argparse, json, re, time

def situations(data_dir) -> list[dict]:
    "Each held-out conversation's context before its first reply when that was an offer, with the teacher's price."
    from bilateral.chat import sendable
    from bilateral.sft import load_sft_data
    out, test = [], load_sft_data(data_dir)['test']
    for m, role in zip(test['messages'], test['role']):
        m = sendable(json.loads(m))
        i = next(k for k, x in enumerate(m) if x['role'] == 'assistant')
        off = next((c for c in m[i].get('tool_calls', []) if c['function']['name'] == 'make_offer'), None)
        if off is None: continue
        listing = float(re.search(r'Listing price: \$(\d+(?:\.\d+)?)', m[1]['content']).group(1))
        out.append({'messages': m[:i], 'role': role, 'listing': listing,
                    'teacher': json.loads(off['function']['arguments'])['price']})
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('model'), ap.add_argument('data'), ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from bilateral.sft import first_offer_scores, first_offers
    torch.set_num_threads(a.threads)
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    sit, t0, res = situations(a.data), time.time(), {}
    for role in ('buyer', 'seller'):
        s = [x for x in sit if x['role'] == role]
        res[role] = first_offer_scores(first_offers(model, tok, s, batch=8), s)
    print(json.dumps({'model': a.model, 'seconds': round(time.time() - t0), **res}))

if __name__ == '__main__': main()
