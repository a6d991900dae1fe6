"""SEAL replay: a Gradio Space to browse, step through and compare a SEAL run's episodes, or run one live.

UI only: every answer comes from `seal_hub.replay` (sources, episodes, chat rendering, what the agent was shown,
side-by-side alignment, live episodes). Run it with `seal-hub space [--run NS/RUN]`, or `python app.py` in a
deployed Space, where `replay.json` (written by `seal-hub space deploy`) names the run and its pinned revision.
Deep links: ``?run=NS/RUN&rev=iter-2&iter=iter-1&task=multi_turn_base_0&rollout=0&turn=2`` (and ``b_iter``,
``b_run``, ``b_rev``, ``b_rollout`` to open the side-by-side view).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from seal_hub.replay.episodes import ALL, ReplayError  # noqa: E402
from seal_hub.replay.live import LiveLimits, LiveRequest, LiveRunner  # noqa: E402
from seal_hub.replay.page import EPISODE_VERSION, Selection, Viewer, deep_link  # noqa: E402

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


def _settings() -> tuple[str, str]:
    """The run (and pinned revision) to open first: $SEAL_REPLAY_RUN / $SEAL_REPLAY_REVISION, else replay.json."""
    run, revision = os.environ.get("SEAL_REPLAY_RUN", ""), os.environ.get("SEAL_REPLAY_REVISION", "")
    config = HERE / "replay.json"
    if not run and config.is_file():
        pinned = json.loads(config.read_text(encoding="utf-8"))
        run, revision = pinned.get("run", ""), pinned.get("revision", "")
    return run, revision


DEFAULT_RUN, DEFAULT_REVISION = _settings()
VIEWER = Viewer(DEFAULT_RUN)
LIVE = LiveRunner(None, LiveLimits(max_steps=int(os.environ.get("SEAL_REPLAY_LIVE_STEPS", "8"))))


def _problem(exc: Exception) -> str:
    """A one-line message for the page; unexpected errors are logged with their traceback, never shown."""
    if isinstance(exc, ValueError | KeyError | OSError):
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    else:
        LOG.exception("replay view failed")
        message = f"unexpected {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no message'}"
    return f"⚠️ {message}"


def _selection(run, rev, iteration, version, label, category, outcome, search, task, rollout, turn=None):
    return Selection(
        run=(run or "").strip(),
        revision=rev or "",
        iteration=iteration or "",
        version=version or EPISODE_VERSION,
        task=task or "",
        rollout=int(rollout or 0),
        turn=turn,
        label=label or ALL,
        category=category or ALL,
        outcome=outcome or ALL,
        search=search or "",
    )


def show(run, rev, iteration, version, label, category, outcome, search, task, rollout, frame=None, turn=None):
    """Everything the browse and replay views show for one selection (`frame` None: the start or `turn`)."""
    selection = _selection(run, rev, iteration, version, label, category, outcome, search, task, rollout, turn)
    try:
        browse = VIEWER.browse(selection)
        chosen = browse.selection
        if not chosen.task:
            raise ReplayError(f"no episode matches the filters ({browse.episodes} in {chosen.iteration})")
        replay = VIEWER.replay(chosen, None if frame is None else int(frame))
    except Exception as exc:  # noqa: BLE001 - every failure becomes a line in the page
        return [gr.update()] * 9 + [[], "", "", "", 0, _problem(exc), "", gr.update()]
    counts = f"{browse.matching} of {browse.episodes} episodes match"
    here = replace(chosen, turn=None)
    return [
        gr.update(choices=browse.revisions, value=chosen.revision or (browse.revisions or [""])[0]),
        gr.update(choices=browse.iterations, value=chosen.iteration),
        gr.update(choices=browse.versions, value=chosen.version),
        gr.update(choices=browse.labels, value=chosen.label),
        gr.update(choices=browse.categories, value=chosen.category),
        gr.update(choices=browse.tasks, value=chosen.task),
        gr.update(choices=[str(r) for r in browse.rollouts], value=str(chosen.rollout)),
        counts,
        replay.view.summary,
        replay.messages,
        replay.shown_markdown,
        replay.position,
        f"[🔗 link to this view]({deep_link(here)})",
        replay.frame,
        "",
        "",
        replay.tools_json,
    ]


def step(run, rev, iteration, version, label, category, outcome, search, task, rollout, frame, delta):
    """Move `delta` frames (a large delta jumps to the end, a large negative one to the start)."""
    selection = _selection(run, rev, iteration, version, label, category, outcome, search, task, rollout)
    try:
        replay = VIEWER.replay(selection, max(0, int(frame or 0) + int(delta)))
    except Exception as exc:  # noqa: BLE001
        return [gr.update()] * 3 + [int(frame or 0), _problem(exc)]
    return replay.messages, replay.shown_markdown, replay.position, replay.frame, ""


def tick(run, rev, iteration, version, label, category, outcome, search, task, rollout, frame):
    """One auto-play step; the timer stops itself at the last frame (or on an error)."""
    selection = _selection(run, rev, iteration, version, label, category, outcome, search, task, rollout)
    try:
        replay = VIEWER.replay(selection, int(frame or 0) + 1)
    except Exception as exc:  # noqa: BLE001
        return [gr.update()] * 4 + [_problem(exc), gr.Timer(active=False), "▶ Play"]
    playing = replay.frame < replay.view.last_frame
    label = "⏸ Pause" if playing else "▶ Play"
    return replay.messages, replay.shown_markdown, replay.position, replay.frame, "", gr.Timer(active=playing), label


def _stepper(delta: int):
    def move(run, rev, iteration, version, label, category, outcome, search, task, rollout, frame):
        return step(run, rev, iteration, version, label, category, outcome, search, task, rollout, frame, delta)

    return move


def toggle_play(playing_label):
    playing = playing_label.startswith("▶")
    return gr.Timer(active=playing), "⏸ Pause" if playing else "▶ Play"


def compare(
    run, rev, iteration, version, label, category, outcome, search, task, rollout, b_run, b_rev, b_iter, b_rollout
):
    """The selected task in episode A (the browse selection) and episode B (another iteration/run/revision)."""
    a = _selection(run, rev, iteration, version, label, category, outcome, search, task, rollout)
    b = Selection(
        run=(b_run or "").strip() or a.run,
        revision=(b_rev or "").strip(),
        iteration=b_iter or "",
        task=a.task,
        rollout=int(b_rollout or 0),
    )
    if not (b.run != a.run or b.revision or b.iteration):
        return "", "", "", "", "⚠️ choose episode B: another iteration, revision or run"
    try:
        result = VIEWER.compare(a, b)
    except Exception as exc:  # noqa: BLE001
        return "", "", "", "", _problem(exc)
    changes = "\n".join(
        f"- **{line[0]}** {line[2:]}" if line[:2] in ("+ ", "- ", "~ ") else f"- {line}" for line in result.changes
    )
    title = f"**{result.title_a}** vs **{result.title_b}** · [🔗 link]({deep_link(a, b)})"
    return title, result.alignment, f"**Interface diff**\n\n{changes}", result.diff_html, ""


def b_iterations(run, rev, b_run, b_rev):
    try:
        source = VIEWER.source(
            Selection(run=(b_run or "").strip() or (run or "").strip(), revision=b_rev or rev or "")
        )
    except Exception as exc:  # noqa: BLE001
        return gr.update(choices=[], value=None), _problem(exc)
    return gr.update(choices=list(source.iterations), value=list(source.iterations)[0]), ""


def live_versions(run, rev):
    """The interface versions the live tab offers: the open run's, newest selected."""
    try:
        versions = list(VIEWER.source(Selection(run=(run or "").strip(), revision=rev or "")).versions())
    except Exception:  # noqa: BLE001 - the browse view already says what is wrong with the run
        return gr.update(choices=["v0"], value="v0")
    return gr.update(choices=versions, value=versions[-1])


def live(policy, task, version, run, rev):
    """Stream a live episode: the chat after every model step, then the verified episode."""
    try:
        if LIVE.suite is None:
            LIVE.suite = VIEWER.suite
        selection = Selection(run=(run or "").strip(), revision=rev or "")
        if version and version != EPISODE_VERSION and selection.run:
            snapshot = VIEWER.source(selection).interface(version)
        else:
            from seal_hub.interface import InterfaceSnapshot

            snapshot = InterfaceSnapshot.null()
        request = LiveRequest(policy=policy or "tiny", task_id=(task or "").strip(), interface=snapshot)
        for frame in LIVE.stream(request):
            yield frame.messages, ("⏹ " if frame.done else "⏳ ") + frame.status
    except Exception as exc:  # noqa: BLE001
        yield gr.update(), _problem(exc)


def build() -> gr.Blocks:
    with gr.Blocks(title="SEAL replay") as demo:
        gr.Markdown(
            "# SEAL replay\nBrowse a SEAL run's episodes, step through one turn by turn with what the agent was "
            "shown, compare the same task under two environment versions, or run a policy live."
        )
        status = gr.Markdown("", elem_id="seal-status")
        with gr.Row():
            run = gr.Textbox(DEFAULT_RUN, label="Run", placeholder="NS/RUN, hf://NS/RUN or a directory", scale=3)
            rev = gr.Dropdown(
                [DEFAULT_REVISION] if DEFAULT_REVISION else [],
                value=DEFAULT_REVISION or None,
                label="Revision",
                allow_custom_value=True,
                scale=1,
            )
            iteration = gr.Dropdown([], label="Iteration / evaluation", allow_custom_value=True, scale=1)
            version = gr.Dropdown(
                [EPISODE_VERSION],
                value=EPISODE_VERSION,
                label="Show under interface",
                allow_custom_value=True,
                scale=1,
            )
            open_button = gr.Button("Open", variant="primary", scale=0)
        with gr.Row():
            label = gr.Dropdown([ALL], value=ALL, label="Failure label", allow_custom_value=True)
            category = gr.Dropdown([ALL], value=ALL, label="Category", allow_custom_value=True)
            outcome = gr.Radio([ALL, "passed", "failed"], value=ALL, label="Outcome")
            search = gr.Textbox("", label="Search task id", placeholder="e.g. base_1")
        with gr.Row():
            task = gr.Dropdown([], label="Task", allow_custom_value=True, scale=3)
            rollout = gr.Dropdown([], label="Rollout", allow_custom_value=True, scale=1)
            counts = gr.Markdown("")
        frame = gr.State(0)
        with gr.Tabs() as tabs:
            with gr.Tab("Replay", id="replay"):
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
                    tools_code = gr.Code("[]", language="json", interactive=False)
                timer = gr.Timer(1.0, active=False)
            with gr.Tab("Side by side", id="compare"):
                with gr.Row():
                    b_run = gr.Textbox("", label="B: run (empty: same run)", scale=2)
                    b_rev = gr.Textbox("", label="B: revision (empty: same)", scale=1)
                    b_iter = gr.Dropdown([], label="B: iteration / evaluation", allow_custom_value=True, scale=1)
                    b_rollout = gr.Number(0, label="B: rollout", precision=0, scale=1)
                    compare_button = gr.Button("Compare", variant="primary", scale=0)
                compare_title = gr.Markdown("")
                alignment = gr.Markdown("")
                changes = gr.Markdown("")
                diff_html = gr.HTML("")
            with gr.Tab("Live", id="live"):
                gr.Markdown(
                    f"Run a CPU-sized policy on one task, streaming each model step. At most "
                    f"{LIVE.limits.max_steps} model steps, {LIVE.limits.max_new_tokens} tokens per step and "
                    f"{LIVE.limits.max_seconds:.0f} s; every visitor gets their own episode."
                )
                with gr.Row():
                    live_policy = gr.Dropdown(
                        ["tiny", "demo"],
                        value="tiny",
                        label="Policy (or adapter NS/RUN-adapter@iter-k)",
                        allow_custom_value=True,
                    )
                    live_task = gr.Textbox("multi_turn_base_0", label="Task id")
                    live_version = gr.Dropdown(["v0"], value="v0", label="Interface version", allow_custom_value=True)
                    live_button = gr.Button("Run live", variant="primary", scale=0)
                live_status = gr.Markdown("")
                live_chat = gr.Chatbot(label="Live episode", height=520)

        browse_inputs = [run, rev, iteration, version, label, category, outcome, search, task, rollout]
        outputs = [
            rev,
            iteration,
            version,
            label,
            category,
            task,
            rollout,
            counts,
            summary,
            chat,
            shown,
            position,
            link,
            frame,
            status,
            compare_title,
            tools_code,
        ]
        step_outputs = [chat, shown, position, frame, status]

        def show_from_start(*values):
            return show(*values, frame=None)

        def reopen(run_value, rev_value):
            return show(run_value, rev_value, "", EPISODE_VERSION, ALL, ALL, ALL, "", "", 0)

        open_button.click(reopen, [run, rev], outputs, api_name="open").then(
            live_versions, [run, rev], [live_version], api_name=False
        )
        run.submit(reopen, [run, rev], outputs, api_name=False).then(
            live_versions, [run, rev], [live_version], api_name=False
        )
        for widget in (rev, iteration, version, label, category, outcome, task, rollout):
            widget.input(show_from_start, browse_inputs, outputs, api_name=False)
        search.submit(show_from_start, browse_inputs, outputs, api_name=False)
        apply = gr.Button("Apply", visible=False)
        apply.click(show_from_start, browse_inputs, outputs, api_name="show")
        for button, delta, name in (
            (first, -(10**6), "first"),
            (back, -1, "back"),
            (forward, 1, "forward"),
            (last, 10**6, "last"),
        ):
            button.click(_stepper(delta), [*browse_inputs, frame], step_outputs, api_name=name)
        chat.change(None, None, None, js=SCROLL_TO_LATEST, api_name=False)
        play.click(toggle_play, [play], [timer, play], api_name=False)
        timer.tick(tick, [*browse_inputs, frame], [chat, shown, position, frame, status, timer, play], api_name=False)
        b_run.change(b_iterations, [run, rev, b_run, b_rev], [b_iter, status], api_name=False)
        compare_button.click(
            compare,
            [*browse_inputs, b_run, b_rev, b_iter, b_rollout],
            [compare_title, alignment, changes, diff_html, status],
            api_name="compare",
        )
        live_button.click(
            live, [live_policy, live_task, live_version, run, rev], [live_chat, live_status], api_name="live"
        )

        def on_load(request: gr.Request):
            params = dict(request.query_params) if request is not None else {}
            keep_b = [gr.update()] * 7 + [gr.Tabs(selected="replay")]
            try:
                a = Selection.from_query(params, default_run=DEFAULT_RUN)
                b = Selection.from_query(params, prefix="b_") if any(k.startswith("b_") for k in params) else None
            except ReplayError as exc:
                return [gr.update()] * 14 + [_problem(exc), gr.update(), gr.update()] + keep_b + [gr.update()]
            if not a.revision and DEFAULT_REVISION and a.run == DEFAULT_RUN:
                a = replace(a, revision=DEFAULT_REVISION)
            if not a.run:
                message = "Type a run (NS/RUN) or a directory and press Open."
                return [gr.update()] * 14 + [message, "", ""] + keep_b + [gr.update()]
            values = show(a.run, a.revision, a.iteration, a.version, ALL, ALL, ALL, "", a.task, a.rollout, turn=a.turn)
            shown_run = gr.update(value=a.run)  # the box names the run the link asked for, even a wrong one
            if b is None or values[14]:
                return values + keep_b + [shown_run]
            shown_rev, shown_iter, shown_task, shown_rollout = (values[i]["value"] for i in (0, 1, 5, 6))
            b_run_value = b.run if b.run and b.run != a.run else ""
            title, aligned, changed, html, problem = compare(
                a.run,
                shown_rev,
                shown_iter,
                a.version,
                ALL,
                ALL,
                ALL,
                "",
                shown_task,
                shown_rollout,
                b_run_value,
                b.revision,
                b.iteration,
                b.rollout,
            )
            values[15] = title
            if problem:
                values[14] = problem
            try:
                iterations = list(VIEWER.source(replace(b, run=b.run or a.run)).iterations)
                b_iterations_update = gr.update(choices=iterations, value=b.iteration or iterations[0])
            except Exception:  # noqa: BLE001 - the compare message already says what is wrong
                b_iterations_update = gr.update()
            return values + [
                gr.update(value=b_run_value),
                gr.update(value=b.revision),
                b_iterations_update,
                gr.update(value=b.rollout),
                aligned,
                changed,
                html,
                gr.Tabs(selected="compare"),
                shown_run,
            ]

        demo.load(
            on_load,
            None,
            [*outputs, b_run, b_rev, b_iter, b_rollout, alignment, changes, diff_html, tabs, run],
            api_name=False,
        ).then(live_versions, [run, rev], [live_version], api_name=False)
    return demo


demo = build()

if __name__ == "__main__":
    demo.launch(css=CSS, theme=THEME, ssr_mode=False)
