"""The packages of the wheel: seal_hub's own, and the two top-level folders it ships inside itself (model_cards/ and
spaces/replay/, mapped in pyproject.toml's [tool.setuptools.package-dir]; setuptools' `find` sees no mapped folder,
so they are named here). Everything else about the build is in pyproject.toml."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["seal_hub*"]), "seal_hub.model_cards", "seal_hub.spaces.replay"])
