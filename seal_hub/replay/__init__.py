"""The replay Space: its logic without any UI, reachable by tests without a browser, and its page.

- where episodes come from: runs (local registry or Hub), evaluation and training directories
  (`replay_source.py`);
- the episodes of an iteration, filtered and listed (`episodes.py`);
- an episode as chat messages with step-through frames (`chat.py`);
- what the agent was shown at a point, under any environment version (`shown.py`);
- two episodes of one task aligned turn by turn, and the interface diff (`compare.py`);
- each view of the page as plain data, and deep links (`page.py`);
- live episodes streamed step by step (`live.py`);
- the runs the page offers, the newest first (`runs.py`);
- the page: its widgets (`panels.py`) and handlers (`space_app.py`, imported by the Space repository's app.py,
  top-level spaces/replay/);
- `seal-hub space` and deploying the Space (`commands.py`, `deploy.py`).

Importing this package is cheap: gradio is never imported here, and torch only when a live episode starts.
"""

from seal_hub.replay.episodes import EpisodeFilter, EpisodeSummary, EpisodeTable, ReplayError
from seal_hub.replay.page import Selection, Viewer, deep_link
from seal_hub.replay.replay_source import ReplaySource, open_replay_source

__all__ = [
    "EpisodeFilter",
    "EpisodeSummary",
    "EpisodeTable",
    "ReplayError",
    "ReplaySource",
    "Selection",
    "Viewer",
    "deep_link",
    "open_replay_source",
]
