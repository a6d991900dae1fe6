"""Error lines a stranger may read: one line, no host paths, the visitor's own input cut to a short prefix.

`quiet(message, inputs)` is what the replay Space shows for every problem: the message's first line, each of
`inputs` (what the visitor typed) longer than `ECHO` characters replaced by its prefix and an ellipsis, every
absolute or home-relative path replaced by ``[path]``, and the whole cut to `MAX_LINE` characters. `cut(text)`
is the prefix rule alone, for messages that name an input themselves.

Design choice: paths are removed by shape (a ``/``-rooted, ``~/`` or ``./`` run of path characters that does not
follow a word character, ``:`` or ``/``), not by listing the host's folders, so a registry, cache or temporary
folder the Space never told us about is hidden too; ``NS/RUN`` and ``hf://NS/RUN`` do not have that shape and
stay readable.

Not covered: which inputs are allowed (`seal_hub.replay.access`), logging the full error for the operator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ECHO = 32  # characters of a visitor's input an error line repeats
MAX_LINE = 240  # characters of an error line in all
PATH = re.compile(r"(?<![\w:/.~-])(?:~|\.{1,2})?(?:/[^\s'\"`,;()\[\]{}<>|]+)+/?|\b[A-Za-z]:\\[^\s'\"`]+")


def cut(text: str, keep: int = ECHO) -> str:
    """`text` itself when short, else its first `keep` characters and an ellipsis."""
    return text if len(text) <= keep else text[:keep] + "…"


def quiet(message: str, inputs: Iterable[str] = ()) -> str:
    """`message` as one short line without host paths, echoing each of `inputs` at most `ECHO` characters long."""
    line = (message.strip().splitlines() or [""])[0]
    for value in sorted((v for v in inputs if isinstance(v, str) and len(v) > ECHO), key=len, reverse=True):
        line = line.replace(value, cut(value))
    line = PATH.sub("[path]", line)
    return cut(line, MAX_LINE)
