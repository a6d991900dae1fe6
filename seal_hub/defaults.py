"""The defaults that several configurations and commands share, each written once.

`RolloutConfig`, `EvalProtocol`, `SealConfig`, the experiment's evaluation settings, the replay Space's live limits
and the `seal-hub eval` / `seal-hub rollout` options all default to these names, so one change here moves every one
of them (YAML configs may still give their own values). Where each number comes from is in docs/method.md.

Design choice: a module that imports nothing, so the command-line parsers and the light config records can name
these without loading torch, bfcl-eval or the rollout engine. Not covered: a suite's own settings (its step limits
live with its episodes, `seal_hub.envs.episode`), or the numbers of one recipe (recipes/configs/).
"""

EVAL_MAX_NEW_TOKENS = 512  # tokens per model step when scoring: `seal-hub eval`, held-out evaluations, the experiment
MAX_CONTEXT_TOKENS = 8192  # the longest token sequence of one episode (the paper's prompt limit)
MAX_LIVE_EPISODES = 16  # episodes generated together in one batch (which rows batch together changes rounding)
DEFAULT_SUITE = "bfcl"  # the suite a command or config means when it names none: BFCL v3 multi-turn, the paper's
