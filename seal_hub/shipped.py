"""The two folders at the top of a checkout that the wheel also ships: ``model_cards/`` (the card templates) and
``spaces/replay/`` (the Space repository a user pushes as it is).

They live at the top of the tree, where a reader of the repository looks for them, and exist there once: the wheel
carries them inside the package (``seal_hub/model_cards/``, ``seal_hub/spaces/replay/``) through the build mapping
of pyproject.toml (``[tool.setuptools.package-dir]``, with setup.py naming the two mapped packages). `shipped`
finds a folder in either place: inside the installed package first (a wheel install), else beside the package (a
checkout, an editable install, or PYTHONPATH pointing at one).

Not covered: what the folders hold; their readers are `seal_hub.hub.cards` and `seal_hub.replay.deploy`.
"""

from __future__ import annotations

from pathlib import Path

MODEL_CARDS = "model_cards"
SPACE_REPO = "spaces/replay"


def shipped(folder: str, needs: str) -> Path:
    """The shipped `folder` (``model_cards`` or ``spaces/replay``) holding the file `needs`; an installation
    lacking it fails with one line that says to reinstall."""
    package = Path(__file__).resolve().parent
    for root in (package, package.parent):
        if (root / folder / needs).is_file():
            return root / folder
    raise FileNotFoundError(
        f"no {folder}/{needs} in {package} or beside it: the seal_hub installation is incomplete; reinstall it"
    )
