"""The metric's Space widget (when this folder is pushed to the Hub as an evaluate module)."""

from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(str(Path(__file__).parent))
launch_gradio_widget(module)
