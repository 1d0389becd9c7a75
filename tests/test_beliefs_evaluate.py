"""Whether asking changes play (issue 57): `probe_effect` and `evaluate(probe=...)` on the tiny offline model."""
import json
import pytest


def test_probe_effect_on_the_tiny_model(tiny_model, tmp_path):
    """The tiny model and its probed twin on the same scenarios and seeds: asked by a separate request it plays every
    paired game the same (gaps exactly 0); asked by the tool, its conversation changes, and the gaps and the count of
    games played the same say by how much, with intervals over scenarios."""
    from bilateral.evaluate import probe_effect
    d, _ = tiny_model
    models = {'tiny': f'hf:{d}?window=4&max_turns=10'}
    req = probe_effect(models, ['linear'], tmp_path / 'request', games_per_pair=4, n_boot=100)
    assert req['same'][['games', 'same']].values.tolist() == [[8, 8]]
    assert (req['gaps'][['diff', 'lo', 'hi']].abs().fillna(0) == 0).all().all()
    assert set(req['gaps'].unit) == {'scenario'} and (req['gaps'].scenarios == 4).all()
    b = req['beliefs']
    assert set(b.role) == {'buyer', 'seller'} and (b.answered_scenarios <= 4).all()
    tool = probe_effect(models, ['linear'], tmp_path / 'tool', probe='tool', games_per_pair=4, n_boot=100)
    s = tool['same'].iloc[0]
    assert s.games == 8 and 0 <= s.same <= 8
    g = tool['gaps'].set_index('measure')
    assert g.loc['share', 'pairs'] == 8 and g.loc['share', 'scenarios'] == 4
    print(tool['same'].to_dict('records'), tool['gaps'][['measure', 'diff', 'lo', 'hi']].to_dict('records'))


def test_evaluate_with_probes(tiny_model, tmp_path):
    "`evaluate(..., probe='request')` plays the probed twins under OUT/probes and writes their effect to summary.json."
    from bilateral.evaluate import evaluate
    d, _ = tiny_model
    ev = evaluate({'tiny': f'hf:{d}?window=4&max_turns=6'}, ['linear'], [], tmp_path, games_per_pair=2, n_boot=20,
                  figures=False, probe='request')
    summ = json.loads((tmp_path / 'summary.json').read_text())
    assert set(summ['probe_effect']) == {'gaps', 'same', 'beliefs'}
    assert summ['probe_effect']['same'][0]['same'] == summ['probe_effect']['same'][0]['games'] == 4
    assert (tmp_path / 'probes' / 'runs').is_dir() and 'probes' in ev
    plain = evaluate({'tiny': f'hf:{d}?window=4&max_turns=6'}, ['linear'], [], tmp_path / 'plain', games_per_pair=2,
                     n_boot=20, figures=False)
    assert 'probe_effect' not in plain['summary'] and 'probes' not in plain
    assert plain['tables']['outcomes'].equals(ev['tables']['outcomes'])     # probes beside, the evaluation unchanged
