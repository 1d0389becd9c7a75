"""A GRPO run of the chain's SFT model outside `make reproduce`, kept as a learning curve.

    python tools/sweep_grpo.py SFT_MODEL NAME key=value ...   (train_grpo's settings: max_steps, num_generations,
                                                               batch, lr, beta, temperature, scenarios,
                                                               opponent, role, reward, scale_rewards;
                                                               reward: a name of REWARDS or a JSON dict of weights)

Writes data/sweeps/grpo/NAME.json (the settings and train_grpo's report: every step's log and the reward trend);
`nbs/09c_grpo.ipynb` draws it."""
import json, sys
from pathlib import Path
import transformers
from bilateral.grpo import train_grpo

def main(model: str, name: str, **a):
    transformers.logging.set_verbosity_error()
    words = ('opponent', 'role', 'reward', 'scale_rewards')
    num = {k: (float(v) if '.' in v or 'e-' in v else int(v)) for k, v in a.items() if k not in words}
    a = {'opponent': 'boulware', 'role': 'buyer', 'reward': 'share-invalid-failed', **a}   # kept in the settings
    if a['reward'].startswith('{'): a['reward'] = json.loads(a['reward'])   # weights of REWARD_PARTS
    rep = train_grpo(model, f'/tmp/sweep-grpo-{name}', opponent=a['opponent'], role=a['role'], reward=a['reward'],
                     preset='dollars', **num, **{k: a[k] for k in ('scale_rewards',) if k in a})
    out = Path(__file__).resolve().parents[1] / 'data' / 'sweeps' / 'grpo' / f'{name}.json'
    out.parent.mkdir(parents=True, exist_ok=True)
    keep = ('steps', 'rollouts', 'seconds', 'seconds_per_step', 'env_share', 'config', 'log', 'trend')
    out.write_text(json.dumps({'name': name, 'settings': a, **{k: rep[k] for k in keep}}, indent=1) + '\n')
    print(out)

if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], **dict(x.split('=', 1) for x in sys.argv[3:]))
