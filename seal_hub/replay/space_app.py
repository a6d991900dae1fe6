"""SEAL replay: the Gradio Space to browse, step through and compare a SEAL run's episodes, or run one live.

UI only: every answer comes from `seal_hub.replay` (sources, episodes, chat rendering, what the agent was shown,
side-by-side alignment, live episodes, the visitor rules). `create(folder)` builds the page for the Space whose files
are in `folder`: the Space repository's app.py (top-level ``spaces/replay/app.py``, what ``seal-hub space`` serves
and ``seal-hub space deploy`` pushes) calls it with its own folder, where a deployed Space's ``replay.json`` names
the run, its pinned revision and the allowlists (`seal_hub.replay.settings`). Deep links:
``?run=NS/RUN&rev=iter-2&iter=iter-1&task=multi_turn_base_0&rollout=0&turn=2`` (and ``b_iter``, ``b_run``,
``b_rev``, ``b_rollout`` to open the side-by-side view).

What a newcomer sees first: with no run given, the page lists the runs it may show (`seal_hub.replay.runs`) and
opens the newest; an episode opens whole (the agent's last answer shown, stepping back from there), or at the turn a
deep link names.

Layout: the panels' widgets come from `seal_hub.replay.panels`; a `Page` holds them and the shared `Space`; its
handlers take Gradio's dict inputs (``{widget: value}``) and return dicts keyed by widget. Per-visitor state (the
replay frame, the visitor's live slot) lives in `gr.State`; what visitors share (opened sources, loaded policies)
lives in the `Space`, which handlers never reassign.

Not covered: the views as data (`seal_hub.replay.page`), the checks on visitor input (`seal_hub.replay.access`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from seal_hub.defaults import DEFAULT_SUITE

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from seal_hub.replay.access import Access  # noqa: E402
from seal_hub.replay.episodes import ALL, ReplayError  # noqa: E402
from seal_hub.replay.live import LiveLimits, LiveRequest, LiveRunner, LiveSlot  # noqa: E402
from seal_hub.replay.page import EPISODE_VERSION, MissingTask, Selection, Viewer, deep_link  # noqa: E402
from seal_hub.replay.panels import (  # noqa: E402
    CSS,
    SCROLL_TO_LATEST,
    THEME,
    BrowsePanel,
    ComparePanel,
    LivePanel,
    ReplayPanel,
    browse_panel,
    compare_panel,
    header,
    live_panel,
    problem,
    replay_panel,
)
from seal_hub.replay.policies import MB, PolicyCache, load_named  # noqa: E402
from seal_hub.replay.quiet import quiet  # noqa: E402
from seal_hub.replay.runs import offered_runs  # noqa: E402
from seal_hub.replay.settings import SpaceSettings  # noqa: E402

__all__ = ["CSS", "THEME", "Page", "Space", "build", "create"]
STEPS = (("first", -(10**6)), ("back", -1), ("forward", 1), ("last", 10**6))
FREE = {"concurrency_limit": None}  # browsing never queues


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

    def runs(self) -> list[str]:
        """The runs the run list offers, the one to open first at the top (read at each page load)."""
        return offered_runs(self.settings.run, self.access)


@dataclass
class Page:
    """The widgets of one page and the handlers that fill them; handlers take and return dicts keyed by widget."""

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
            b.rev, b.iteration, b.version, b.label, b.category, b.task, b.rollout, b.counts, r.summary, r.chat,
            r.shown, r.position, r.link, r.frame, self.status, self.compare.title, r.tools,
        ]  # fmt: skip

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

    def selection(self, values: dict[Any, Any]) -> Selection:
        """The checked selection the browse widgets hold in `values`."""
        rollout = self.space.access.text(values[self.browse.rollout], "rollout") or "0"
        if not rollout.lstrip("-").isdigit():
            raise ReplayError(f"rollout {rollout[:12]!r} is not a number")
        return self.checked(self.browse.selection(values, int(rollout)))

    def failed(self, exc: Exception, inputs) -> dict:
        r = self.replay
        return {
            r.chat: [], r.shown: "", r.position: "", r.link: "", r.frame: 0, self.compare.title: "",
            self.status: problem(exc, list(inputs)),
        }  # fmt: skip

    def show(self, values: dict[Any, Any]) -> dict:
        """Everything the browse and replay views show for the browse widgets' `values`: the episode whole."""
        try:
            return self.shown(self.selection(values))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a line in the page
            return self.failed(exc, values.values())

    def reopen(self, values: dict[Any, Any]) -> dict:
        """A run (and revision) opened afresh: its latest iteration, its first matching episode, every filter off."""
        b = self.browse
        fresh = {widget: "" for widget in b.inputs} | {b.run: values[b.run], b.rev: values[b.rev]}
        return self.show(fresh | {b.version: EPISODE_VERSION, b.label: ALL, b.category: ALL, b.outcome: ALL})

    def shown(self, selection: Selection, missing_ok: bool = False) -> dict:
        """The page for a checked `selection`, the episode whole unless it names a turn; with `missing_ok`, a task
        the run lacks opens its first episode."""
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
        replay = viewer.replay(chosen)
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

    def step(self, values: dict[Any, Any], delta: int = 0) -> dict:
        """Move `delta` frames from this visitor's frame (a large delta jumps to an end)."""
        frame = int(values[self.replay.frame] or 0)
        try:
            replay = self.space.viewer.replay(self.selection(values), max(0, frame + delta))
        except Exception as exc:  # noqa: BLE001
            return {self.replay.frame: frame, self.status: problem(exc, list(values.values()))}
        return self.panel_at(replay)

    def tick(self, values: dict[Any, Any]) -> dict:
        """One auto-play step; the timer stops itself at the last frame (or on an error). Playing from the last
        frame starts over from the first."""
        r = self.replay
        try:
            selection = self.selection(values)
            frame = int(values[r.frame] or 0)
            at_end = frame >= self.space.viewer.replay(selection, frame).view.last_frame
            replay = self.space.viewer.replay(selection, 0 if at_end else frame + 1)
        except Exception as exc:  # noqa: BLE001
            failed = problem(exc, list(values.values()))
            return {self.status: failed, r.timer: gr.Timer(active=False), r.play: "▶ Play"}
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
            cleared = {c.title: "", c.alignment: "", c.changes: "", c.diff_html: ""}
            return cleared | {self.status: "⚠️ choose episode B: another iteration, revision or run"}
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

    def compare_clicked(self, values: dict[Any, Any]) -> dict:
        c = self.compare
        try:
            b = (values[c.b_run], values[c.b_rev], values[c.b_iter], values[c.b_rollout])
            return self.compared(self.selection(values), *b)
        except Exception as exc:  # noqa: BLE001
            failed = problem(exc, list(values.values()))
            return {c.title: "", c.alignment: "", c.changes: "", c.diff_html: "", self.status: failed}

    def b_iterations(self, values: dict[Any, Any]) -> dict:
        access, b, c = self.space.access, self.browse, self.compare
        try:
            chosen = Selection(
                run=access.run(values[c.b_run], "B: run") or access.run(values[b.run]),
                revision=access.revision(values[c.b_rev], "B: revision") or access.revision(values[b.rev]),
            )
            iterations = list(self.space.viewer.source(chosen).iterations)
        except Exception as exc:  # noqa: BLE001
            failed = problem(exc, [values[c.b_run], values[c.b_rev]])
            return {c.b_iter: gr.update(choices=[], value=None), self.status: failed}
        return {c.b_iter: gr.update(choices=iterations, value=iterations[0]), self.status: ""}

    def live_versions(self, values: dict[Any, Any]) -> dict:
        """The environment versions the live tab offers: the open run's, newest selected."""
        access, b = self.space.access, self.browse
        try:
            chosen = Selection(run=access.run(values[b.run]), revision=access.revision(values[b.rev]))
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
            suite = source.interface(source.versions()[-1]).suite if source is not None else DEFAULT_SUITE
            snapshot = InterfaceSnapshot.null(suite)
        return LiveRequest(policy=policy, task_id=task, interface=snapshot)

    def run_live(self, policy, task, version, run, rev, slot: LiveSlot):
        """Stream a live episode (one per visitor at a time): the chat after every model step, then the verdict.
        (Positional: the /live endpoint's order, policy first, is what API clients send.)"""
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
        """Open what the page's URL names (the newest run offered when it names none; a missing task says so), and
        episode B beside it if asked; the run list is read afresh."""
        params = dict(request.query_params) if request is not None else {}
        settings, runs = self.space.settings, self.space.runs()
        try:
            a = Selection.from_query(params, default_run=settings.run or (runs[0] if runs else ""))
            b = Selection.from_query(params, prefix="b_") if any(k.startswith("b_") for k in params) else None
            if not a.revision and settings.revision and a.run == settings.run:
                a = replace(a, revision=settings.revision)
            a = self.checked(a)
        except Exception as exc:  # noqa: BLE001
            run = params.get("run", "")[:120]
            return {self.status: problem(exc, list(params.values())), self.browse.run: gr.update(value=run)}
        if not a.run:
            hint = "Type a run (NS/RUN, hf://NS/RUN) or a directory and press Open: the local registry holds none yet."
            return {self.status: hint, self.browse.run: gr.update(choices=runs)}
        try:
            values = self.shown(a, missing_ok=True)
        except Exception as exc:  # noqa: BLE001
            values = self.failed(exc, list(params.values()))
        if not (params.get("run") or settings.run) and not values[self.status]:
            others = f"; {len(runs) - 1} more under Run" if len(runs) > 1 else ""
            values[self.status] = f"No run given: showing **{a.run}**, the newest run of the local registry{others}."
        # the box names the run the link asked for, even a wrong one
        values[self.browse.run] = gr.update(choices=list(dict.fromkeys([*runs, a.run])), value=a.run)
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
    b, outputs = page.browse, page.shown_outputs
    versions = (page.live_versions, {b.run, b.rev}, [page.live.version])
    b.open_button.click(page.reopen, {b.run, b.rev}, outputs, api_name="open", **FREE).then(
        *versions, api_name=False, **FREE
    )
    b.run.select(page.reopen, {b.run, b.rev}, outputs, api_name=False, **FREE).then(*versions, api_name=False, **FREE)
    for widget in (b.rev, b.iteration, b.version, b.label, b.category, b.outcome, b.task, b.rollout):
        widget.input(page.show, b.inputs, outputs, api_name=False, **FREE)
    b.search.submit(page.show, b.inputs, outputs, api_name=False, **FREE)
    gr.Button("Apply", visible=False).click(page.show, b.inputs, outputs, api_name="show", **FREE)


def wire_replay(page: Page) -> None:
    r, inputs = page.replay, {*page.browse.inputs, page.replay.frame}
    for name, delta in STEPS:

        def move(values, delta=delta):
            return page.step(values, delta=delta)

        r.buttons[name].click(move, inputs, page.step_outputs, api_name=name, **FREE)
    r.chat.change(None, None, None, js=SCROLL_TO_LATEST, api_name=False)
    r.play.click(page.toggle_play, [r.play], [r.timer, r.play], api_name=False, **FREE)
    r.timer.tick(page.tick, inputs, [*page.step_outputs, r.timer, r.play], api_name=False, **FREE)


def wire_compare(page: Page) -> None:
    c, b = page.compare, page.browse
    b_chosen = {b.run, b.rev, c.b_run, c.b_rev}
    c.b_run.change(page.b_iterations, b_chosen, [c.b_iter, page.status], api_name=False, **FREE)
    outputs = [c.title, c.alignment, c.changes, c.diff_html, page.status]
    c.button.click(page.compare_clicked, b.inputs | c.inputs, outputs, api_name="compare", **FREE)


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
    access, settings, limits = space.access, space.settings, space.live.limits
    intro = (
        f"Run a CPU-sized policy on one task, streaming each model step: at most {limits.max_steps} model steps, "
        f"{limits.max_new_tokens} tokens per step and {limits.max_seconds:.0f} s, one live episode per visitor at "
        "a time. "
    )
    with gr.Blocks(title="SEAL replay") as demo:
        header(access.public, access.runs)
        status = gr.Markdown("", elem_id="seal-status")
        browse = browse_panel(
            offered_runs(settings.run, access) if access.public else [],
            settings.run,
            settings.revision,
            access.public,
            access.cap,
        )
        with gr.Tabs() as tabs:
            with gr.Tab("Replay", id="replay"):
                replay = replay_panel()
            with gr.Tab("Side by side", id="compare"):
                compare = compare_panel(access.cap)
            with gr.Tab("Live", id="live"):
                live = live_panel(access.policies, access.public, access.cap, intro)
        page = Page(space, status, tabs, browse, replay, compare, live)
        for wire in (wire_browse, wire_replay, wire_compare, wire_live):
            wire(page)
        c = compare
        loaded = [*page.shown_outputs, c.b_run, c.b_rev, c.b_iter, c.b_rollout, c.alignment, c.changes, c.diff_html]
        demo.load(page.on_load, None, [*loaded, tabs, browse.run], api_name=False, **FREE).then(
            page.live_versions, {browse.run, browse.rev}, [live.version], api_name=False, **FREE
        )
    return demo.queue(default_concurrency_limit=settings.live_concurrency, max_size=settings.queue_size), page


def create(folder: Path) -> tuple[Space, gr.Blocks, Page]:
    """The Space whose settings are read from `folder` (a deployed Space's ``replay.json``) and the environment."""
    space = Space.create(SpaceSettings.read(folder))
    demo, page = build(space)
    return space, demo, page
