"""The task sampler: pass rates from verified rollouts, frontier weights, draws that a resume repeats."""

from __future__ import annotations

from collections import Counter

import pytest

from seal_hub.training.task_sampler import FLOOR, TaskSampler

CATEGORIES = {f"easy_{i}": "easy" for i in range(10)} | {f"hard_{i}": "hard" for i in range(10)}
CATEGORIES |= {f"mid_{i}": "mid" for i in range(10)}


def sampler(kind="frontier") -> TaskSampler:
    return TaskSampler(kind, num_generations=4, categories=dict(CATEGORIES))


def test_latest_groups_are_kept_and_categories_pool_them():
    s = sampler()
    s.observe([("easy_0", True)] * 4 + [("hard_0", False)] * 4 + [("mid_0", True), ("mid_0", False)] * 2)
    s.observe([("easy_0", True), ("easy_0", False), ("easy_0", True), ("easy_0", True)])  # the latest replaces
    assert s.latest == {"easy_0": (3, 4), "hard_0": (0, 4), "mid_0": (2, 4)}
    assert s.category_rates() == {"easy": 0.75, "hard": 0.0, "mid": 0.5}
    # a seen task: its passes shrunk toward its category with one group's weight; unseen: the category's rate
    assert s.pass_rate("easy_0") == pytest.approx((3 + 4 * 0.75) / 8)
    assert s.pass_rate("easy_5") == pytest.approx(0.75)
    assert TaskSampler("frontier", 4, {"t": "new"}).pass_rate("t") == 0.5


def test_frontier_weights_favour_tasks_whose_groups_disagree():
    s = sampler()
    s.observe([(f"easy_{i}", True) for i in range(3) for _ in range(4)])
    s.observe([(f"hard_{i}", False) for i in range(3) for _ in range(4)])
    s.observe([(f"mid_{i}", ok) for i in range(3) for ok in (True, False, True, False)])
    easy, hard, mid = s.weights(["easy_7", "hard_7", "mid_7"])
    # one task a category: each category's floor share (1/6 of the draw) lifts easy and hard
    mid_weight = FLOOR + 1 - 2 * 0.5**4
    assert mid == pytest.approx(mid_weight)
    assert easy == hard == pytest.approx(mid_weight / 4)  # 1/6 of the total each, mid keeps 4/6
    weights = s.weights(sorted(CATEGORIES))
    shares = {
        c: sum(w for t, w in zip(sorted(CATEGORIES), weights, strict=True) if t.startswith(c)) / sum(weights)
        for c in ("easy", "hard", "mid")
    }
    assert shares["easy"] == pytest.approx(1 / 6) and shares["hard"] == pytest.approx(1 / 6)
    s.observe([("hard_0", ok) for ok in (True, False, False, False)])  # within a category the frontier rule orders
    within = s.weights(["hard_0", "hard_7", "mid_7"])
    assert within[0] > 1.5 * within[1] and sum(within[:2]) >= within[2] / 3 * (1 - 1e-9)  # two categories: 1/4 each
    counts = Counter(
        task[: task.index("_")] for step in range(300) for task in s.draw(sorted(CATEGORIES), 3, 0, step, 0)
    )
    total = sum(counts.values())
    assert 0.55 * total < counts["mid"] < 0.8 * total  # the frontier category gets most of the draw
    assert counts["easy"] > 0.1 * total and counts["hard"] > 0.1 * total  # and no category is starved
    assert sampler("uniform").weights(["easy_0", "hard_0"]) == [1.0, 1.0]


def test_draws_are_distinct_reproducible_and_avoid_excluded_tasks():
    s = sampler()
    ids = sorted(CATEGORIES)
    first = s.draw(ids, 5, seed=3, step=7, draw=1)
    assert len(set(first)) == 5 and first == s.draw(ids, 5, seed=3, step=7, draw=1)
    assert first != s.draw(ids, 5, seed=3, step=7, draw=2)
    rest = s.draw(ids, 40, seed=3, step=7, draw=1, exclude=first)
    assert len(rest) == len(ids) and set(rest[:25]).isdisjoint(first)  # excluded ones only once the rest are spent
    restored = sampler()
    restored.load_state(s.state())
    assert restored.draw(ids, 5, seed=3, step=7, draw=1) == first


def test_the_summary_says_what_the_sampler_was_teaching():
    s = sampler()
    s.observe([("mid_0", ok) for ok in (True, False, True, False)] + [("easy_0", True)] * 4)
    summary = s.summary(top=3)
    assert summary["kind"] == "frontier" and summary["tasks_seen"] == 2
    assert summary["categories"]["mid"]["pass_rate"] == 0.5 and summary["categories"]["hard"]["pass_rate"] is None
    assert sum(c["draw_share"] for c in summary["categories"].values()) == pytest.approx(1.0, abs=1e-3)
    assert summary["categories"]["mid"]["draw_share"] > summary["categories"]["easy"]["draw_share"]
    assert summary["most_weighted"][0]["task_id"].startswith(("mid", "hard"))
    with pytest.raises(ValueError, match="task_sampler"):
        TaskSampler("greedy")
