"""The replay Space's widgets: one builder per panel (browse, replay, side by side, live), each returning its widgets
as a frozen record, and the page's look (theme, CSS, the chat's scroll-to-latest script).

Design choice: a panel record names its widgets, and `BrowsePanel.inputs` is the *set* of widgets a selection is
read from: handlers take Gradio's dict inputs (one ``{widget: value}`` dict) and read each value by its widget, so no
handler takes a ten-argument positional list and no call site depends on an argument order. Widgets are typed: the
run a dropdown of the runs this Space may show (free text too, on one's own machine), the rollout a number.

Not covered: what the widgets show and when (`seal_hub.replay.space_app`), the views as data (`seal_hub.replay.page`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from seal_hub.replay.episodes import ALL
from seal_hub.replay.live import LiveSlot
from seal_hub.replay.page import EPISODE_VERSION, Selection
from seal_hub.replay.quiet import quiet

LOG = logging.getLogger("seal_hub.space")
# system fonts first: a Space offline (or a firewalled browser) cannot fetch web fonts, and a half-loaded web font
# draws some capitals from a fallback face
THEME = gr.themes.Soft(
    font=["ui-sans-serif", "system-ui", "Segoe UI", "Helvetica", "Arial", "sans-serif"],
    font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
)
CSS = """
.seal-diff {max-height: 560px; overflow: auto; border: 1px solid #ddd}
.seal-diff table.diff {font-family: ui-monospace, monospace; font-size: 12px; width: 100%}
.seal-diff .diff_add {background: #d7f5dd} .seal-diff .diff_chg {background: #fff3bf}
.seal-diff .diff_sub {background: #ffd8d8} .seal-diff td {white-space: pre-wrap; word-break: break-word}
#seal-status p {font-weight: 600}
"""
# after each step the chat shows its latest message (the chat scrolls inside its own box)
SCROLL_TO_LATEST = """() => { setTimeout(() => {
  const root = document.querySelector('#seal-chat');
  if (!root) return;
  for (const el of [root, ...root.querySelectorAll('*')]) {
    const style = getComputedStyle(el).overflowY;
    const scrolls = style === 'auto' || style === 'scroll';
    if (scrolls && el.scrollHeight > el.clientHeight + 4) el.scrollTop = el.scrollHeight;
  }
}, 200); }"""


def choice(choices: list[str], **kwargs: Any) -> gr.Dropdown:
    """A dropdown without custom values whose out-of-list values reach the handler, which refuses them in one
    short line: Gradio's own check would answer with the whole value and every choice. (Not a subclass: Gradio
    writes a .pyi stub beside the module of every component subclass.)"""
    dropdown = gr.Dropdown(choices, allow_custom_value=False, **kwargs)
    dropdown.preprocess = lambda payload: payload  # the handler checks it against the allowlist
    return dropdown


@dataclass(frozen=True)
class BrowsePanel:
    run: Any
    rev: Any
    iteration: Any
    version: Any
    label: Any
    category: Any
    outcome: Any
    search: Any
    task: Any
    rollout: Any
    counts: Any
    open_button: Any

    @property
    def inputs(self) -> set[Any]:
        """The widgets a selection is read from (Gradio passes their values as one dict)."""
        names = ("run", "rev", "iteration", "version", "label", "category", "outcome", "search", "task", "rollout")
        return {getattr(self, name) for name in names}

    def selection(self, values: dict[Any, Any], rollout: int) -> Selection:
        """The unchecked selection these widgets hold in `values` (`rollout` already read as a number)."""
        return Selection(
            run=values[self.run] or "",
            revision=values[self.rev] or "",
            iteration=values[self.iteration] or "",
            version=values[self.version] or EPISODE_VERSION,
            task=values[self.task] or "",
            rollout=rollout,
            label=values[self.label] or ALL,
            category=values[self.category] or ALL,
            outcome=values[self.outcome] or ALL,
            search=values[self.search] or "",
        )


def browse_panel(runs: list[str], run: str, revision: str, public: bool, cap: int) -> BrowsePanel:
    """`runs`: the runs offered in the run dropdown; `run` (and `revision`) the one opened first."""
    info = "the runs this Space shows" if public else "the local registry's runs, newest first; or type hf://NS/RUN"
    with gr.Row():
        run_box = gr.Dropdown(
            runs or ([run] if run else []),
            value=run or None,
            label="Run",
            info=info + ("" if public else " or a directory"),
            allow_custom_value=True,
            scale=3,
        )
        rev = gr.Dropdown(
            [revision] if revision else [], value=revision or None, label="Revision", allow_custom_value=True, scale=1
        )
        iteration = gr.Dropdown([], label="Iteration / evaluation", allow_custom_value=True, scale=1)
        version = gr.Dropdown(
            [EPISODE_VERSION], value=EPISODE_VERSION, label="Show under interface", allow_custom_value=True, scale=1
        )
        open_button = gr.Button("Open", variant="primary", scale=0)
    with gr.Row():
        label = gr.Dropdown([ALL], value=ALL, label="Failure label", allow_custom_value=True)
        category = gr.Dropdown([ALL], value=ALL, label="Category", allow_custom_value=True)
        outcome = gr.Radio([ALL, "passed", "failed"], value=ALL, label="Outcome")
        search = gr.Textbox("", label="Search task id", placeholder="e.g. base_1", max_length=cap)
    with gr.Row():
        task = gr.Dropdown([], label="Task", allow_custom_value=True, scale=3)
        rollout = gr.Dropdown([], label="Rollout", allow_custom_value=True, scale=1)
        counts = gr.Markdown("")
    return BrowsePanel(
        run_box, rev, iteration, version, label, category, outcome, search, task, rollout, counts, open_button
    )


@dataclass(frozen=True)
class ReplayPanel:
    summary: Any
    buttons: dict[str, Any]  # first, back, forward, last
    play: Any
    position: Any
    link: Any
    chat: Any
    shown: Any
    tools: Any
    timer: Any
    frame: Any  # gr.State: this visitor's frame


def replay_panel() -> ReplayPanel:
    summary = gr.Markdown("")
    with gr.Row():
        first = gr.Button("⏮ First", size="sm", scale=1, min_width=90)
        back = gr.Button("◀ Back", size="sm", scale=1, min_width=90)
        play = gr.Button("▶ Play", size="sm", scale=1, min_width=90)
        forward = gr.Button("Forward ▶", size="sm", scale=1, min_width=90)
        last = gr.Button("Last ⏭", size="sm", scale=1, min_width=90)
        with gr.Column(scale=2, min_width=260):  # "step 12 of 12 · turn 4 of 4" on one line, the link below it
            position = gr.Markdown("")
            link = gr.Markdown("")
    with gr.Row():
        chat = gr.Chatbot(label="Episode", height=620, scale=3, elem_id="seal-chat")
        shown = gr.Markdown("", label="What the agent was shown", max_height=620, container=True)
    with gr.Accordion("Tool schemas as the agent saw them (JSON)", open=False):
        tools = gr.Code("[]", language="json", interactive=False)
    buttons = {"first": first, "back": back, "forward": forward, "last": last}
    return ReplayPanel(
        summary, buttons, play, position, link, chat, shown, tools, gr.Timer(1.0, active=False), gr.State(0)
    )


@dataclass(frozen=True)
class ComparePanel:
    b_run: Any
    b_rev: Any
    b_iter: Any
    b_rollout: Any
    button: Any
    title: Any
    alignment: Any
    changes: Any
    diff_html: Any

    @property
    def inputs(self) -> set[Any]:
        return {self.b_run, self.b_rev, self.b_iter, self.b_rollout}


def compare_panel(cap: int) -> ComparePanel:
    with gr.Row():
        b_run = gr.Textbox("", label="B: run (empty: same run)", max_length=cap, scale=2)
        b_rev = gr.Textbox("", label="B: revision (empty: same)", max_length=cap, scale=1)
        b_iter = gr.Dropdown([], label="B: iteration / evaluation", allow_custom_value=True, scale=1)
        b_rollout = gr.Number(0, label="B: rollout", precision=0, minimum=0, scale=1)
        button = gr.Button("Compare", variant="primary", scale=0)
    return ComparePanel(
        b_run, b_rev, b_iter, b_rollout, button, gr.Markdown(""), gr.Markdown(""), gr.Markdown(""), gr.HTML("")
    )


@dataclass(frozen=True)
class LivePanel:
    policy: Any
    task: Any
    version: Any
    button: Any
    status: Any
    chat: Any
    slot: Any  # gr.State: this visitor's LiveSlot


def live_panel(policies: tuple[str, ...], public: bool, cap: int, intro: str) -> LivePanel:
    offered = ", ".join(f"`{name}`" for name in policies)
    gr.Markdown(intro + (f"Policies offered here: {offered}." if public else "Any policy name, path or adapter."))
    with gr.Row():
        if public:
            policy = choice(list(policies), value=policies[0], label="Policy")
        else:
            policy = gr.Dropdown(
                list(policies),
                value=policies[0],
                allow_custom_value=True,
                label="Policy (or adapter NS/RUN-adapter@iter-k)",
            )
        task = gr.Textbox("multi_turn_base_0", label="Task id", max_length=cap)
        version = gr.Dropdown(["v0"], value="v0", label="Environment version", allow_custom_value=True)
        button = gr.Button("Run live", variant="primary", scale=0)
    status = gr.Markdown("")
    chat = gr.Chatbot(label="Live episode", height=520)
    return LivePanel(policy, task, version, button, status, chat, gr.State(LiveSlot()))


def header(public: bool, runs: tuple[str, ...]) -> None:
    text = (
        "# SEAL replay\nBrowse a SEAL run's episodes, step through one turn by turn with what the agent was "
        "shown, compare the same task under two environment versions, or run a policy live."
    )
    if public:
        listed = ", ".join(f"`{name}`" for name in runs)
        text += f" This Space shows the published runs of {listed} and runs only the live policies listed under Live."
    gr.Markdown(text)


def problem(exc: Exception, inputs: list[Any] | tuple[Any, ...] = ()) -> str:
    """A one-line message for the page; unexpected errors are logged with their traceback, never shown."""
    if isinstance(exc, ValueError | KeyError | OSError):
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    else:
        LOG.exception("replay view failed")
        message = f"unexpected {type(exc).__name__}: {str(exc) or 'no message'}"
    return "⚠️ " + quiet(message, [str(value) for value in inputs if value is not None])
