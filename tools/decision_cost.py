"""What one SFT pass costs per conversation in three designs, measured in one run on the same conversations: the whole
transcript (every reply trained through the whole game before it), its decisions one by one (each reply through its
window), and the decisions packed (`09b_sft`: the shared prefix once, each decision's segment on top of it).

    python tools/decision_cost.py MODEL_DIR SFT_DATA_DIR [--convs N] [--window W] [--threads T]

For each design: tokens run through the model, and the seconds of one forward and backward pass (a LoRA of rank 16 on
every linear layer, as the `smollm2` configs), summed over the first N conversations of the train split, with the ratio
to the whole transcripts. Prints one JSON object."""
import argparse, json, time

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('model'), ap.add_argument('data')
    ap.add_argument('--convs', type=int, default=4)
    ap.add_argument('--window', type=int, default=4)
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from bilateral.sft import (_LINEAR, PackCollator, decision_packs, load_sft_data, pack_loss, sft_tokens,
                               training_template)
    torch.set_num_threads(a.threads)
    tok = AutoTokenizer.from_pretrained(a.model)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32),
                           LoraConfig(r=16, lora_alpha=32, target_modules=_LINEAR, task_type='CAUSAL_LM'))
    split, tpl = load_sft_data(a.data)['train'].select(range(a.convs)), training_template(tok)
    designs = {'whole transcript': sft_tokens(tok, split, 8192, tpl),
               'decisions one by one': sft_tokens(tok, split, 8192, tpl, window=a.window),
               'decisions packed': decision_packs(tok, split, a.window, tpl, 8192)}
    def step(row):
        if 'segments' in row: loss, n = pack_loss(model, PackCollator()([row]))
        else:
            ids = torch.tensor([row['input_ids']])
            lab = torch.tensor([[t if m else -100 for t, m in zip(row['input_ids'], row['assistant_masks'])]])
            loss, n = model(input_ids=ids, labels=lab).loss, 1
        (loss / n).backward()
    model.train()
    step(designs['decisions packed'][0])          # warm-up, not timed
    out = {}
    for name, ds in designs.items():
        model.zero_grad()
        t0 = time.perf_counter()
        for row in ds: step(row)
        out[name] = {'samples': len(ds), 'tokens': sum(map(len, ds['input_ids'])),
                     'seconds': round(time.perf_counter() - t0, 1)}
    ref = out['whole transcript']
    for v in out.values():
        v['tokens_vs_whole'], v['seconds_vs_whole'] = (round(v['tokens'] / ref['tokens'], 2),
                                                       round(v['seconds'] / ref['seconds'], 2))
    replies = sum(sum(m['role'] == 'assistant' for m in json.loads(x)) for x in split['messages'])
    print(json.dumps({'model': a.model, 'conversations': a.convs, 'replies': replies, 'window': a.window,
                      'threads': a.threads, 'designs': out}, indent=1))

if __name__ == '__main__': main()
