"`tools/reply_kinds.py` and `tools/decision_probe.py`: how they sort replies and read a probe's rows (06f_models)."
import json
import decision_probe as dp                 # tools/, on the path from conftest
import reply_kinds as rk

def offer(p): return [('make_offer', {'price': p}), ('wait_for_response', {})]

def test_reply_kinds_sorts_moves_repeats_and_accepts():
    replies = [offer(30.0), offer(30.0), offer(31.5), [('accept_offer', {'offer_id': 'S3'})], [('send_message', {})]]
    assert rk.kinds_of(replies) == ['first offer', 'same price', 'new price', 'accept', 'other']
    assert rk.kinds_of([[('send_message', {})], offer(10)]) == ['other', 'first offer']   # no offer yet: still first
    assert rk.counts([rk.kinds_of(replies)])['same price'] == 1

def _msg(calls): return {'role': 'assistant', 'content': '', 'tool_calls': [
    {'id': '', 'type': 'function', 'function': {'name': n, 'arguments': json.dumps(a)}} for n, a in calls]}

def test_dagger_turns_set_what_the_student_did_beside_the_label():
    mine = [_msg(offer(30.0)), _msg(offer(30.0)), _msg(offer(30.0))]        # the student opens, then repeats twice
    labels = [_msg(offer(30.0)), _msg(offer(28.0)), _msg([('accept_offer', {'offer_id': 'B2'})]), _msg(offer(20.0))]
    user = {'role': 'user', 'content': 'news'}
    hist = lambda k: [x for m in mine[:k] for x in (user, m)] + [user]
    samples = [('g', hist(k) + [labels[k]]) for k in range(4)]
    assert rk.dagger_turns(samples) == {('first offer', 'first offer'): 1, ('same price', 'new price'): 1,
                                        ('same price', 'accept'): 1}      # the last turn: the student's reply unknown

def test_spans_are_the_runs_of_an_assistant_mask():
    assert dp.spans([0, 1, 1, 0, 0, 1, 0, 1]) == [(1, 3), (5, 6), (7, 8)]
    assert dp.spans([0, 0]) == [] and dp.spans([1]) == [(0, 1)]

def test_summary_counts_where_each_choice_wins():
    rows = [{'conversation': 0, 'reply': 1, 'kind': 'accept', 'p_accept': 0.3, 'p_make': 0.6},
            {'conversation': 0, 'reply': 2, 'kind': 'accept', 'p_accept': 0.7, 'p_make': 0.2},
            {'conversation': 1, 'reply': 1, 'kind': 'new', 'p_accept': 0.1, 'p_make': 0.9, 'p_teacher': 0.2,
             'p_copy': 0.5},
            {'conversation': 1, 'reply': 2, 'kind': 'same', 'p_accept': 0.6, 'p_make': 0.4}]
    s = dp.summary(rows)
    assert (s['conversations'], s['replies'], s['accept moments'], s['offer moments']) == (2, 4, 2, 2)
    assert (s['p(accept) there'], s['accept > make there']) == (0.5, 0.5)
    assert (s['p(accept) at offers'], s['accept > make at offers']) == (0.35, 0.5)
    assert (s['new-price moments'], s['copy > teacher'], s['p(copied digit)']) == (1, 1.0, 0.5)
    assert dp.summary([])['p(accept) there'] is None

def test_label_kind_reads_the_last_reply_against_the_students_last_price():
    user = {'role': 'user', 'content': 'news'}
    conv = lambda *ms: [x for m in ms for x in (user, _msg(m))]
    acc = [('accept_offer', {'offer_id': 'S3'})]
    assert dp.label_kind(conv(offer(30.0), offer(30.0), acc)) == 'accept'
    assert dp.label_kind(conv(offer(30.0), offer(30.0), offer(28.5))) == 'new'
    assert dp.label_kind(conv(offer(30.0), [('send_message', {})], offer(30.0))) == 'same'   # the last price before
    assert dp.label_kind(conv(offer(30.0))) is None and dp.label_kind(conv(acc)) is None    # a first reply: no label
    assert dp.label_kind(conv(offer(30.0), [('send_message', {})])) is None
    split = {'messages': [json.dumps(conv(offer(30.0), m)) for m in (acc, offer(29.0), offer(30.0), acc, acc)]}
    picked = dp.pick_labels(split, 1)
    assert len(picked) == 3 and set(picked) - {0, 3, 4} == {1, 2}        # one of each kind, sorted
    assert dp.pick_labels(split, 1) == picked and sorted(dp.pick_labels(split, 5)) == [0, 1, 2, 3, 4]
