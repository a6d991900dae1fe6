"""SEAL replay: a Gradio Space to browse, step through and compare a SEAL run's episodes, or run one live.

UI only: every answer comes from `seal_hub.replay` (sources, episodes, chat rendering, what the agent was shown,
side-by-side alignment, live episodes, the visitor rules). Run it with `seal-hub space [--run NS/RUN] [--public]`,
or `python app.py` in a deployed Space, where `replay.json` (written by `seal-hub space deploy`) names the run,
its pinned revision and the allowlists, and puts the page in deployed mode (`seal_hub.replay.settings`).
Deep links: ``?run=NS/RUN&rev=iter-2&iter=iter-1&task=multi_turn_base_0&rollout=0&turn=2`` (and ``b_iter``,
``b_run``, ``b_rev``, ``b_rollout`` to open the side-by-side view).

This folder (app.py, README.md with the Space's front matter, requirements.txt) is package data, not an importable
module: `seal-hub space` loads app.py from the installed package, and `seal-hub space deploy` copies the three files
to the root of a Space repository, beside a copy of the seal_hub package.

Layout: one builder per panel (browse, replay, side by side, live) returns its widgets as a frozen record; a
`Page` holds them and the shared `Space`, and its handlers return dicts keyed by widget. Per-visitor state
(the replay frame, the visitor's live slot) lives in `gr.State`; what visitors share (opened sources, loaded
policies) lives in the `Space`, which handlers never reassign.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from seal_hub.replay.access import Access  # noqa: E402
from seal_hub.replay.episodes import ALL, ReplayError  # noqa: E402
from seal_hub.replay.live import LiveLimits, LiveRequest, LiveRunner, LiveSlot  # noqa: E402
from seal_hub.replay.page import EPISODE_VERSION, MissingTask, Selection, Viewer, deep_link  # noqa: E402
from seal_hub.replay.policies import MB, PolicyCache, load_named  # noqa: E402
from seal_hub.replay.quiet import quiet  # noqa: E402
from seal_hub.replay.settings import SpaceSettings  # noqa: E402

HERE = Path(__file__).resolve().parent
# system fonts first: a Space offline (or a firewalled browser) cannot fetch web fonts, and a half-loaded web font
# draws some capitals from a fallback face
THEME = gr.themes.Soft(
    font=["ui-sans-serif", "system-ui", "Segoe UI", "Helvetica", "Arial", "sans-serif"],
    font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
)
LOG = logging.getLogger("seal_hub.space")
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
STEPS = (("first", -(10**6)), ("back", -1), ("forward", 1), ("last", 10**6))


@dataclass
class Space:
    """What all visitors share: the settings, the visitor rules, opened sources and loaded policies."""

    settings: SpaceSettings
    access: Access
    viewer: Viewer
    live: LiveRunner

    @classmethod
    def create(cls, settings: SpaceSettings) -> Space:
        policies = PolicyCache(load_named, settings.policy_count, settings.policy_mb * MB)
        live = LiveRunner(None, LiveLimits(max_steps=settings.live_steps), policies)
        return cls(settings, settings.access(), Viewer(settings.run), live)


def choice(choices: list[str], **kwargs: Any) -> gr.Dropdown:
    """A dropdown without custom values whose out-of-list values reach the handler, which refuses them in one
    short line: Gradio's own check would answer with the whole value and every choice. (Not a subclass: Gradio
    writes a .pyi stub beside the module of every component subclass.)"""
    dropdown = gr.Dropdown(choices, allow_custom_value=False, **kwargs)
    dropdown.preprocess = lambda payload: payload  # the handler checks it against the allowlist
    return dropdown


def problem(exc: Exception, inputs: list[Any] | tuple[Any, ...] = ()) -> str:
    """A one-line message for the page; unexpected errors are logged with their traceback, never shown."""
    if isinstance(exc, ValueError | KeyError | OSError):
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    else:
        LOG.exception("replay view failed")
        message = f"unexpected {type(exc).__name__}: {str(exc) or 'no message'}"
    return "⚠️ " + quiet(message, [str(value) for value in inputs if value is not None])


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
    def inputs(self) -> list[Any]:
        return [
            self.run,
            self.rev,
            self.iteration,
            self.version,
            self.label,
            self.category,
            self.outcome,
            self.search,
            self.task,
            self.rollout,
        ]


def browse_panel(space: Space) -> BrowsePanel:
    settings, public = space.settings, space.access.public
    hint = f"NS/RUN (runs of {', '.join(space.access.runs)})" if public else "NS/RUN, hf://NS/RUN or a directory"
    revision = settings.revision
    with gr.Row():
        run = gr.Textbox(settings.run, label="Run", placeholder=hint, max_length=space.access.cap, scale=3)
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
        search = gr.Textbox("", label="Search task id", placeholder="e.g. base_1", max_length=space.access.cap)
    with gr.Row():
        task = gr.Dropdown([], label="Task", allow_custom_value=True, scale=3)
        rollout = gr.Dropdown([], label="Rollout", allow_custom_value=True, scale=1)
        counts = gr.Markdown("")
    return BrowsePanel(
        run, rev, iteration, version, label, category, outcome, search, task, rollout, counts, open_button
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
        first = gr.Button("⏮ First", size="sm")
        back = gr.Button("◀ Back", size="sm")
        play = gr.Button("▶ Play", size="sm")
        forward = gr.Button("Forward ▶", size="sm")
        last = gr.Button("Last ⏭", size="sm")
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


def compare_panel(space: Space) -> ComparePanel:
    cap = space.access.cap
    with gr.Row():
        b_run = gr.Textbox("", label="B: run (empty: same run)", max_length=cap, scale=2)
        b_rev = gr.Textbox("", label="B: revision (empty: same)", max_length=cap, scale=1)
        b_iter = gr.Dropdown([], label="B: iteration / evaluation", allow_custom_value=True, scale=1)
        b_rollout = gr.Number(0, label="B: rollout", precision=0, scale=1)
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


def live_panel(space: Space) -> LivePanel:
    limits, access = space.live.limits, space.access
    offered = ", ".join(f"`{name}`" for name in access.policies)
    gr.Markdown(
        f"Run a CPU-sized policy on one task, streaming each model step: at most {limits.max_steps} model steps, "
        f"{limits.max_new_tokens} tokens per step and {limits.max_seconds:.0f} s, one live episode per visitor at "
        f"a time. "
        + (f"Policies offered here: {offered}." if access.public else "Any policy name, path or adapter reference.")
    )
    with gr.Row():
        if access.public:
            policy = choice(list(access.policies), value=access.policies[0], label="Policy")
        else:
            policy = gr.Dropdown(
                list(access.policies),
                value=access.policies[0],
                allow_custom_value=True,
                label="Policy (or adapter NS/RUN-adapter@iter-k)",
            )
        task = gr.Textbox("multi_turn_base_0", label="Task id", max_length=access.cap)
        version = gr.Dropdown(["v0"], value="v0", label="Environment version", allow_custom_value=True)
        button = gr.Button("Run live", variant="primary", scale=0)
    status = gr.Markdown("")
    chat = gr.Chatbot(label="Live episode", height=520)
    return LivePanel(policy, task, version, button, status, chat, gr.State(LiveSlot()))


def header(space: Space) -> None:
    text = (
        "# SEAL replay\nBrowse a SEAL run's episodes, step through one turn by turn with what the agent was "
        "shown, compare the same task under two environment versions, or run a policy live."
    )
    if space.access.public:
        runs = ", ".join(f"`{name}`" for name in space.access.runs)
        text += f" This Space shows the published runs of {runs} and runs only the live policies listed under Live."
    gr.Markdown(text)


@dataclass
class Page:
    """The widgets of one page and the handlers that fill them; handlers return dicts keyed by widget."""

    space: Space
    status: Any
    tabs: Any
    browse: BrowsePanel
    replay: ReplayPanel
    compare: ComparePanel
    live: LivePanel

    @property
    def shown_outputs(self) -> list[Any]:
        """What /open and /show fill, in the order the API returns them."""
        b, r = self.browse, self.replay
        return [
            b.rev,
            b.iteration,
            b.version,
            b.label,
            b.category,
            b.task,
            b.rollout,
            b.counts,
            r.summary,
            r.chat,
            r.shown,
            r.position,
            r.link,
            r.frame,
            self.status,
            self.compare.title,
            r.tools,
        ]

    @property
    def step_outputs(self) -> list[Any]:
        return [self.replay.chat, self.replay.shown, self.replay.position, self.replay.frame, self.status]

    def checked(self, selection: Selection) -> Selection:
        """`selection` with every field passed through the visitor rules (refusals raise `ReplayError`)."""
        access = self.space.access
        run, revision = access.run(selection.run), access.revision(selection.revision)
        text = {
            name: access.text(getattr(selection, name), name)
            for name in ("iteration", "version", "task", "label", "category", "outcome", "search")
        }
        return replace(selection, run=run, revision=revision, **text)

    def selection(self, run, rev, iteration, version, label, category, outcome, search, task, rollout) -> Selection:
        rollout_text = self.space.access.text(rollout, "rollout") or "0"
        if not rollout_text.lstrip("-").isdigit():
            raise ReplayError(f"rollout {rollout_text[:12]!r} is not a number")
        chosen = Selection(
            run=run or "",
            revision=rev or "",
            iteration=iteration or "",
            version=version or EPISODE_VERSION,
            task=task or "",
            rollout=int(rollout_text),
            label=label or ALL,
            category=category or ALL,
            outcome=outcome or ALL,
            search=search or "",
        )
        return self.checked(chosen)

    def failed(self, exc: Exception, inputs) -> dict:
        r = self.replay
        return {
            r.chat: [],
            r.shown: "",
            r.position: "",
            r.link: "",
            r.frame: 0,
            self.compare.title: "",
            self.status: problem(exc, inputs),
        }

    def show(self, *values, frame: int | None = None) -> dict:
        """Everything the browse and replay views show for the selection in `values` (`frame` None: the start)."""
        try:
            return self.shown(self.selection(*values), frame)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a line in the page
            return self.failed(exc, values)

    def reopen(self, run, rev) -> dict:
        return self.show(run, rev, "", EPISODE_VERSION, ALL, ALL, ALL, "", "", 0)

    def shown(self, selection: Selection, frame: int | None = None, missing_ok: bool = False) -> dict:
        """The page for a checked `selection`; with `missing_ok`, a task the run lacks opens its first episode."""
        viewer, note = self.space.viewer, ""
        try:
            browse = viewer.browse(selection)
        except MissingTask as exc:
            if not missing_ok:
                raise
            browse = viewer.browse(replace(selection, task="", rollout=0, turn=None))
            note = f"⚠️ {quiet(str(exc), [selection.task])} today; showing {browse.selection.task} instead"
        chosen = browse.selection
        if not chosen.task:
            raise ReplayError(f"no episode matches the filters ({browse.episodes} in {chosen.iteration})")
        replay = viewer.replay(chosen, None if frame is None else int(frame))
        b, r = self.browse, self.replay
        return {
            b.rev: gr.update(choices=browse.revisions, value=chosen.revision or (browse.revisions or [""])[0]),
            b.iteration: gr.update(choices=browse.iterations, value=chosen.iteration),
            b.version: gr.update(choices=browse.versions, value=chosen.version),
            b.label: gr.update(choices=browse.labels, value=chosen.label),
            b.category: gr.update(choices=browse.categories, value=chosen.category),
            b.task: gr.update(choices=browse.tasks, value=chosen.task),
            b.rollout: gr.update(choices=[str(n) for n in browse.rollouts], value=str(chosen.rollout)),
            b.counts: f"{browse.matching} of {browse.episodes} episodes match",
            **self.panel_at(replay),
            r.summary: replay.view.summary,
            r.link: f"[🔗 link to this view]({deep_link(replace(chosen, turn=None))})",
            self.status: note,
            self.compare.title: "",
            r.tools: replay.tools_json,
        }

    def panel_at(self, replay) -> dict:
        """The replay panel at `replay`'s frame: the chat so far, what the agent was shown, where it is; no status."""
        r = self.replay
        return {
            r.chat: replay.messages,
            r.shown: replay.shown_markdown,
            r.position: replay.position,
            r.frame: replay.frame,
            self.status: "",
        }

    def step(self, *values, delta: int = 0) -> dict:
        """Move `delta` frames from the frame in `values[-1]` (a large delta jumps to an end)."""
        *chosen, frame = values
        try:
            replay = self.space.viewer.replay(self.selection(*chosen), max(0, int(frame or 0) + delta))
        except Exception as exc:  # noqa: BLE001
            return {self.replay.frame: int(frame or 0), self.status: problem(exc, values)}
        return self.panel_at(replay)

    def tick(self, *values) -> dict:
        """One auto-play step; the timer stops itself at the last frame (or on an error)."""
        *chosen, frame = values
        r = self.replay
        try:
            replay = self.space.viewer.replay(self.selection(*chosen), int(frame or 0) + 1)
        except Exception as exc:  # noqa: BLE001
            return {self.status: problem(exc, values), r.timer: gr.Timer(active=False), r.play: "▶ Play"}
        playing = replay.frame < replay.view.last_frame
        return {
            **self.panel_at(replay),
            r.timer: gr.Timer(active=playing),
            r.play: "⏸ Pause" if playing else "▶ Play",
        }

    def toggle_play(self, playing_label: str) -> dict:
        playing = playing_label.startswith("▶")
        return {self.replay.timer: gr.Timer(active=playing), self.replay.play: "⏸ Pause" if playing else "▶ Play"}

    def compared(self, a: Selection, b_run, b_rev, b_iter, b_rollout) -> dict:
        """The selected task in episode A (a checked selection) and episode B (another iteration/run/revision)."""
        c, access = self.compare, self.space.access
        b = Selection(
            run=access.run(b_run, "B: run") or a.run,
            revision=access.revision(b_rev, "B: revision"),
            iteration=access.text(b_iter, "B: iteration"),
            task=a.task,
            rollout=int(b_rollout or 0),
        )
        if not (b.run != a.run or b.revision or b.iteration):
            return {
                c.title: "",
                c.alignment: "",
                c.changes: "",
                c.diff_html: "",
                self.status: "⚠️ choose episode B: another iteration, revision or run",
            }
        result = self.space.viewer.compare(a, b)
        changes = "\n".join(
            f"- **{line[0]}** {line[2:]}" if line[:2] in ("+ ", "- ", "~ ") else f"- {line}" for line in result.changes
        )
        return {
            c.title: f"**{result.title_a}** vs **{result.title_b}** · [🔗 link]({deep_link(a, b)})",
            c.alignment: result.alignment,
            c.changes: f"**Interface diff**\n\n{changes}",
            c.diff_html: result.diff_html,
            self.status: "",
        }

    def compare_clicked(self, *values) -> dict:
        c = self.compare
        try:
            return self.compared(self.selection(*values[:10]), *values[10:])
        except Exception as exc:  # noqa: BLE001
            return {c.title: "", c.alignment: "", c.changes: "", c.diff_html: "", self.status: problem(exc, values)}

    def b_iterations(self, run, rev, b_run, b_rev) -> dict:
        access = self.space.access
        try:
            chosen = Selection(
                run=access.run(b_run, "B: run") or access.run(run),
                revision=access.revision(b_rev, "B: revision") or access.revision(rev),
            )
            iterations = list(self.space.viewer.source(chosen).iterations)
        except Exception as exc:  # noqa: BLE001
            return {self.compare.b_iter: gr.update(choices=[], value=None), self.status: problem(exc, [b_run, b_rev])}
        return {self.compare.b_iter: gr.update(choices=iterations, value=iterations[0]), self.status: ""}

    def live_versions(self, run, rev) -> dict:
        """The environment versions the live tab offers: the open run's, newest selected."""
        access = self.space.access
        try:
            chosen = Selection(run=access.run(run), revision=access.revision(rev))
            versions = list(self.space.viewer.source(chosen).versions())
        except Exception:  # noqa: BLE001 - the browse view already says what is wrong with the run
            return {self.live.version: gr.update(choices=["v0"], value="v0")}
        return {self.live.version: gr.update(choices=versions, value=versions[-1])}

    def live_request(self, policy, task, version, run, rev) -> LiveRequest:
        """A live episode's request, every input checked before anything is loaded."""
        access, viewer = self.space.access, self.space.viewer
        policy = access.policy(policy)
        task, version = access.text(task, "task"), access.text(version, "environment version")
        chosen = Selection(run=access.run(run), revision=access.revision(rev))
        if version and version != EPISODE_VERSION and chosen.run:
            snapshot = viewer.source(chosen).interface(version)
        else:  # the original protocol of the run's suite (BFCL multi-turn without a run)
            from seal_hub.interface import InterfaceSnapshot

            source = viewer.source(chosen) if chosen.run else None
            suite = source.interface(source.versions()[-1]).suite if source is not None else "bfcl"
            snapshot = InterfaceSnapshot.null(suite)
        return LiveRequest(policy=policy, task_id=task, interface=snapshot)

    def run_live(self, policy, task, version, run, rev, slot: LiveSlot):
        """Stream a live episode (one per visitor at a time): the chat after every model step, then the verdict."""
        status, chat = self.live.status, self.live.chat
        try:
            with slot.hold():
                request = self.live_request(policy, task, version, run, rev)
                suite = self.space.viewer.suite_for(request.interface.suite)
                for frame in self.space.live.stream(request, suite):
                    yield {chat: frame.messages, status: ("⏹ " if frame.done else "⏳ ") + frame.status}
        except Exception as exc:  # noqa: BLE001
            yield {status: problem(exc, [policy, task, version, run, rev])}

    def on_load(self, request: gr.Request) -> dict:
        """Open what the page's URL names: the run (a missing task says so), and episode B beside it if asked."""
        params = dict(request.query_params) if request is not None else {}
        settings = self.space.settings
        try:
            a = Selection.from_query(params, default_run=settings.run)
            b = Selection.from_query(params, prefix="b_") if any(k.startswith("b_") for k in params) else None
            if not a.revision and settings.revision and a.run == settings.run:
                a = replace(a, revision=settings.revision)
            a = self.checked(a)
        except Exception as exc:  # noqa: BLE001
            return {self.status: problem(exc, list(params.values())), self.browse.run: params.get("run", "")[:120]}
        if not a.run:
            return {self.status: "Type a run (NS/RUN) or a directory and press Open."}
        try:
            values = self.shown(a, missing_ok=True)
        except Exception as exc:  # noqa: BLE001
            values = self.failed(exc, list(params.values()))
        values[self.browse.run] = gr.update(value=a.run)  # the box names the run the link asked for, even a wrong one
        if b is None or values[self.status]:
            return values | {self.tabs: gr.Tabs(selected="replay")}
        return values | self.loaded_b(a, b, values)

    def loaded_b(self, a: Selection, b: Selection, values: dict) -> dict:
        """The side-by-side view a deep link asks for, beside the episode `values` shows."""
        bw, c = self.browse, self.compare
        shown = replace(
            a,
            revision=values[bw.rev]["value"],
            iteration=values[bw.iteration]["value"],
            task=values[bw.task]["value"],
            rollout=int(values[bw.rollout]["value"]),
        )
        b_run = b.run if b.run and b.run != a.run else ""
        try:
            out = self.compared(shown, b_run, b.revision, b.iteration, b.rollout)
        except Exception as exc:  # noqa: BLE001
            out = {self.status: problem(exc, [b.run, b.revision, b.iteration])}
        try:
            iterations = list(
                self.space.viewer.source(replace(b, run=self.space.access.run(b.run) or a.run)).iterations
            )
            b_iterations = gr.update(choices=iterations, value=b.iteration or iterations[0])
        except Exception:  # noqa: BLE001 - the compare message already says what is wrong
            b_iterations = gr.update()
        return out | {
            c.b_run: b_run,
            c.b_rev: b.revision,
            c.b_iter: b_iterations,
            c.b_rollout: b.rollout,
            self.tabs: gr.Tabs(selected="compare"),
        }


def wire_browse(page: Page) -> None:
    """Opening a run and changing any browse choice re-renders the page (concurrently: browsing never queues)."""
    b, free = page.browse, {"concurrency_limit": None}
    versions = (page.live_versions, [b.run, b.rev], [page.live.version])
    page_outputs = page.shown_outputs
    b.open_button.click(page.reopen, [b.run, b.rev], page_outputs, api_name="open", **free).then(
        *versions, api_name=False, **free
    )
    b.run.submit(page.reopen, [b.run, b.rev], page_outputs, api_name=False, **free).then(
        *versions, api_name=False, **free
    )
    for widget in (b.rev, b.iteration, b.version, b.label, b.category, b.outcome, b.task, b.rollout):
        widget.input(page.show, b.inputs, page_outputs, api_name=False, **free)
    b.search.submit(page.show, b.inputs, page_outputs, api_name=False, **free)
    gr.Button("Apply", visible=False).click(page.show, b.inputs, page_outputs, api_name="show", **free)


def wire_replay(page: Page) -> None:
    r, inputs, free = page.replay, [*page.browse.inputs, page.replay.frame], {"concurrency_limit": None}
    for name, delta in STEPS:

        def move(*values, delta=delta):
            return page.step(*values, delta=delta)

        r.buttons[name].click(move, inputs, page.step_outputs, api_name=name, **free)
    r.chat.change(None, None, None, js=SCROLL_TO_LATEST, api_name=False)
    r.play.click(page.toggle_play, [r.play], [r.timer, r.play], api_name=False, **free)
    r.timer.tick(page.tick, inputs, [*page.step_outputs, r.timer, r.play], api_name=False, **free)


def wire_compare(page: Page) -> None:
    c, b = page.compare, page.browse
    c.b_run.change(
        page.b_iterations,
        [b.run, b.rev, c.b_run, c.b_rev],
        [c.b_iter, page.status],
        api_name=False,
        concurrency_limit=None,
    )
    c.button.click(
        page.compare_clicked,
        [*b.inputs, c.b_run, c.b_rev, c.b_iter, c.b_rollout],
        [c.title, c.alignment, c.changes, c.diff_html, page.status],
        api_name="compare",
        concurrency_limit=None,
    )


def wire_live(page: Page) -> None:
    """Live episodes go through the queue: at most `live_concurrency` at once for all visitors."""
    lv, b = page.live, page.browse
    lv.button.click(
        page.run_live,
        [lv.policy, lv.task, lv.version, b.run, b.rev, lv.slot],
        [lv.chat, lv.status],
        api_name="live",
        concurrency_limit=page.space.settings.live_concurrency,
    )


def build(space: Space) -> tuple[gr.Blocks, Page]:
    """The page for `space`, its queue set (live episodes bounded, browsing free), and its handlers."""
    with gr.Blocks(title="SEAL replay") as demo:
        header(space)
        status = gr.Markdown("", elem_id="seal-status")
        browse = browse_panel(space)
        with gr.Tabs() as tabs:
            with gr.Tab("Replay", id="replay"):
                replay = replay_panel()
            with gr.Tab("Side by side", id="compare"):
                compare = compare_panel(space)
            with gr.Tab("Live", id="live"):
                live = live_panel(space)
        page = Page(space, status, tabs, browse, replay, compare, live)
        for wire in (wire_browse, wire_replay, wire_compare, wire_live):
            wire(page)
        c = compare
        loaded = [
            *page.shown_outputs,
            c.b_run,
            c.b_rev,
            c.b_iter,
            c.b_rollout,
            c.alignment,
            c.changes,
            c.diff_html,
            tabs,
            browse.run,
        ]
        demo.load(page.on_load, None, loaded, api_name=False, concurrency_limit=None).then(
            page.live_versions, [browse.run, browse.rev], [live.version], api_name=False, concurrency_limit=None
        )
    settings = space.settings
    return demo.queue(default_concurrency_limit=settings.live_concurrency, max_size=settings.queue_size), page


SPACE = Space.create(SpaceSettings.read(HERE))
demo, PAGE = build(SPACE)

if __name__ == "__main__":
    demo.launch(css=CSS, theme=THEME, ssr_mode=False)
