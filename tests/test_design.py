from collections import Counter

from logbench.measure.design import schedule


def test_every_pair_once_per_block():
    plan = schedule(("a", "b", "c"), (1, 4), repeats=5, seed=1)
    assert len(plan) == 3 * 2 * 5
    for block in range(5):
        pairs = Counter((p.configuration, p.clients) for p in plan if p.block == block)
        assert set(pairs) == {(c, n) for c in "abc" for n in (1, 4)}
        assert set(pairs.values()) == {1}
    assert [p.position for p in plan] == list(range(len(plan)))


def test_seeded_order_is_reproducible_and_seed_dependent():
    a = schedule(("a", "b", "c", "d"), (1, 2, 3), repeats=3, seed=7)
    assert a == schedule(("a", "b", "c", "d"), (1, 2, 3), repeats=3, seed=7)
    assert a != schedule(("a", "b", "c", "d"), (1, 2, 3), repeats=3, seed=8)


def test_blocks_are_shuffled_independently():
    plan = schedule(tuple("abcdef"), (1,), repeats=4, seed=3)
    orders = {tuple(p.configuration for p in plan if p.block == b) for b in range(4)}
    assert len(orders) > 1


def test_warmup_blocks_come_first_and_are_marked():
    plan = schedule(("a", "b"), (1,), repeats=2, seed=1, warmup_blocks=1)
    assert [p.warmup for p in plan] == [True, True, False, False, False, False]
    assert plan[0].block == -1
