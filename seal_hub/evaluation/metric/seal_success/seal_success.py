"""SEAL / BFCL multi-turn success: per-category success rate and their unweighted mean (the SEAL paper's avg).

A Hugging Face `evaluate` module. It is self-contained (it needs only `evaluate` and `datasets`), so the same
file works from a checkout, from an installed wheel (``seal_hub.evaluation.METRIC_PATH``) or from the Hub.
"""

import datasets
import evaluate

_DESCRIPTION = """\
Success rate of tool-use episodes, per category and averaged the way the SEAL paper's Table 1 does: each task
is one executed, verified episode that passes (1) only if every user turn passed; the success rate of a
category is the percent of its tasks that passed, and "average" is the unweighted mean of the per-category
rates (not the rate over all tasks).
"""

_KWARGS_DESCRIPTION = """
Args:
    passed (`list` of `bool`): one verdict per evaluated task: did its episode pass?
    category (`list` of `str`): the task's category (BFCL multi-turn: base, miss_func, miss_param, long_context).
    categories (`list` of `str`, optional): the order of the categories in the output; unlisted ones follow sorted.
Returns:
    per_category (`dict`): per category, {"passed": int, "total": int, "success_rate": float, percent}.
    average (`float`): the unweighted mean of the per-category success rates, in percent.
    num_tasks (`int`): how many tasks were scored.
Examples:
    >>> metric = evaluate.load("path/to/seal_success")
    >>> metric.compute(passed=[True, False, True], category=["base", "base", "miss_func"])["average"]
    75.0
"""

_CITATION = """\
@article{hu2026seal,
  title={SEAL: Synergistic Co-Evolution of Agents and Learning Environments},
  author={Yihao Hu and Zhihao Wen and Xiujin Liu and Pan Wang and Xin Zhang and Wei Wu},
  journal={arXiv preprint arXiv:2605.24426},
  year={2026}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SealSuccess(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"passed": datasets.Value("bool"), "category": datasets.Value("string")}),
            reference_urls=["https://arxiv.org/abs/2605.24426", "https://gorilla.cs.berkeley.edu/leaderboard.html"],
        )

    def _compute(self, passed, category, categories=None):
        counts = {}
        for ok, name in zip(passed, category, strict=True):
            count = counts.setdefault(name, [0, 0])
            count[0] += int(bool(ok))
            count[1] += 1
        listed = [name for name in (categories or []) if name in counts]
        order = listed + sorted(set(counts) - set(listed))
        per_category = {
            name: {"passed": ok, "total": total, "success_rate": 100.0 * ok / total}
            for name, (ok, total) in ((name, counts[name]) for name in order)
        }
        rates = [score["success_rate"] for score in per_category.values()]
        return {
            "per_category": per_category,
            "average": sum(rates) / len(rates) if rates else 0.0,
            "num_tasks": sum(c[1] for c in counts.values()),
        }
