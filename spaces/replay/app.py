"""SEAL replay, the Hugging Face Space: browse, step through and compare a SEAL run's episodes, or run one live.

This folder is the Space repository, pushed as it is (or by `seal-hub space deploy hf://NS/NAME --run NS/RUN`,
which adds the run's pins in ``replay.json``). The page itself is the installed package's
(`seal_hub.replay.space_app`); `seal-hub space` serves this same file on one's own machine.
"""

from pathlib import Path

from seal_hub.replay.space_app import CSS, THEME, create

SPACE, demo, PAGE = create(Path(__file__).resolve().parent)

if __name__ == "__main__":
    demo.launch(css=CSS, theme=THEME, ssr_mode=False)
