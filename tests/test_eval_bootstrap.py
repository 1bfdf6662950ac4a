"""The eval's bootstrap interval (run_retrieval.py --ci) resamples whole stores."""

from __future__ import annotations


from tests.eval_helpers import run_retrieval



def _runner():
    return run_retrieval()


def _row(rr, pairs):
    row = rr.Row("s", "dev")
    row.values = {name: list(pairs) for name in rr.COLUMNS}
    return row


def test_stores_that_agree_give_an_interval_of_one_point():
    rr = _runner()
    ci = rr.bootstrap(_row(rr, [(f"store{i}", 1.0) for i in range(10)]))
    assert ci["hit@5"] == (1.0, 1.0)


def test_stores_that_disagree_give_an_interval_around_the_mean():
    rr = _runner()
    pairs = [(f"good{i}", 1.0) for i in range(10)] + [(f"bad{i}", 0.0) for i in range(10)]
    low, high = rr.bootstrap(_row(rr, pairs))["MRR"]
    assert 0.2 < low < 0.5 < high < 0.8


def test_the_store_is_the_unit_not_the_case():
    rr = _runner()
    # The same 40 cases: spread over 40 stores, or in 2 stores of 20 that disagree wholly.
    spread = [(f"s{i}", float(i % 2)) for i in range(40)]
    lumped = [("a", 1.0)] * 20 + [("b", 0.0)] * 20
    wide = rr.bootstrap(_row(rr, lumped))["hit@5"]
    narrow = rr.bootstrap(_row(rr, spread))["hit@5"]
    assert wide[1] - wide[0] > narrow[1] - narrow[0]


def test_one_store_gives_no_interval_rather_than_a_point():
    rr = _runner()
    # Resampling one store always draws that store: a width of 0 would claim certainty that five
    # cases of one store cannot give (run_retrieval.py --only STORE --ci).
    ci = rr.bootstrap(_row(rr, [("only", 1.0), ("only", 0.0), ("only", 0.0)]))
    assert ci["neg flagged"] is None
    assert "n/a" in rr.markdown_ci([_row(rr, [("only", 1.0), ("only", 0.0)])])
