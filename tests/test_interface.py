"""The learning interface: null = BFCL byte for byte, schema cues on real BFCL tools, recovery hints, the
train-only flag, JSON round trip and content hash, corrupt files, atomic save, the store, diff, and the CLI."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from helpers.extras import require_bfcl
from helpers.profiles import PROFILE

import seal_hub.atomic as atomic_module
from seal_hub.cli import main
from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label
from seal_hub.envs.bfcl.tools import class_tools
from seal_hub.envs.protocol import ErrorKind, ToolCall, ToolResult
from seal_hub.interface import (
    CapabilityGuidelines,
    Guideline,
    InterfaceError,
    InterfaceSnapshot,
    RecoveryFeedback,
    SchemaCues,
    diff,
    effective_interface,
    load_snapshot,
)
from seal_hub.interface.evolve import GUIDELINES, RECOVERY_HINTS, SCHEMA_NOTE, EvolveConfig, evolve
from seal_hub.interface.snapshot import CauseProfile
from seal_hub.interface.store import SnapshotStore

require_bfcl()  # the tools these snapshots render are BFCL's

from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING  # noqa: E402

ALL_TOOLS = [tool.schema for name in MULTI_TURN_FUNC_DOC_FILE_MAPPING for tool in class_tools(name)]


def _schemas(class_name: str) -> dict[str, dict]:
    return {tool.name: tool.schema for tool in class_tools(class_name)}


def _description(tool: dict, *path: str) -> str:
    node = tool["function"]["parameters"]
    for name in path:
        node = node["properties"][name]
    return node["description"]


@pytest.fixture
def v1() -> InterfaceSnapshot:
    return evolve(InterfaceSnapshot.null(), PROFILE)


def test_null_interface_is_bfcls_protocol_byte_for_byte():
    null = InterfaceSnapshot.null()
    before = json.dumps(ALL_TOOLS)
    rendered = null.render_tools(ALL_TOOLS)
    assert len(ALL_TOOLS) == 162
    assert json.dumps(rendered) == before and rendered == ALL_TOOLS
    assert all(a is not b and a["function"] is not b["function"] for a, b in zip(rendered, ALL_TOOLS, strict=True))
    assert null.system_prompt() is None and null.is_null and null.version == "v0" and null.parent is None
    call = ToolCall("cd", {"folder": "nope"})
    for result in (
        ToolResult(call, '{"current_working_directory": "docs"}', executed=True),
        ToolResult(call, '{"error": "cd: nope: No such directory"}', ErrorKind.BAD_PATH, executed=True),
        ToolResult(call, "7", ErrorKind.WRONG_TYPE, executed=True, note="argument 'folder' must be of type string"),
        ToolResult(None, "Error: could not parse a tool call (json): bad", ErrorKind.PARSE_ERROR),
    ):
        assert null.render_result(result) == result.content


def test_schema_cues_mark_required_and_list_enums_from_both_sources_without_mutating_inputs():
    cues = InterfaceSnapshot(version="cues", schema_cues=SchemaCues(enabled=True))
    vehicle, travel, web, ticket = (
        _schemas(n) for n in ("VehicleControlAPI", "TravelAPI", "WebSearchAPI", "TicketAPI")
    )
    inputs = [vehicle["activateParkingBrake"], vehicle["adjustClimateControl"], vehicle["lockDoors"]]
    inputs += [travel["compute_exchange_rate"], web["fetch_url_content"], ticket["edit_ticket"]]
    pristine = copy.deepcopy(inputs)
    brake, climate, doors, exchange, fetch, edit = cues.render_tools(inputs)
    assert inputs == pristine  # the cached class_tools schemas are untouched
    # BFCL's "[Enum]: [...]" JSON-list convention, required argument
    assert _description(brake, "mode") == (
        'The mode to set. [Enum]: ["engage", "release"] [required] Allowed values: engage, release'
    )
    assert (
        _description(climate, "temperature") == "The temperature to set in degree. Default to be celsius. [required]"
    )
    assert _description(climate, "unit").endswith('["celsius", "fahrenheit"] Allowed values: celsius, fahrenheit')
    assert "[required]" not in _description(climate, "fanSpeed")  # optional, no enum: unchanged
    assert _description(climate, "fanSpeed") == _description(inputs[1], "fanSpeed")
    assert _description(doors, "door").endswith("[required] Allowed values: driver, passenger, rear_left, rear_right")
    # BFCL's "[Enum]: a, b" comma convention
    assert _description(exchange, "base_currency").endswith(
        "[required] Allowed values: USD, RMB, EUR, JPY, GBP, CAD, AUD, INR, RUB, BRL, MXN"
    )
    # JSON-schema `enum` key
    assert _description(fetch, "mode").endswith("Allowed values: raw, markdown, truncate")
    # nested object: "[Optional]" members stay unmarked, the required parent is marked
    assert _description(edit, "updates") == "Dictionary containing the fields to be updated. [required]"
    assert _description(edit, "updates", "title") == "[Optional] New title for the ticket."
    # a required argument that BFCL's text calls "[Optional]" is not marked: the two would contradict
    odd = {"name": "f", "parameters": {"properties": {"a": {"description": "[Optional] x"}}, "required": ["a"]}}
    assert cues.render_tools([odd])[0]["parameters"]["properties"]["a"]["description"] == "[Optional] x"
    # rendering twice adds nothing more
    assert cues.render_tools([brake]) == [brake]


def test_every_required_argument_of_every_bfcl_tool_is_marked_and_no_other():
    rendered = InterfaceSnapshot(version="cues", schema_cues=SchemaCues(enabled=True)).render_tools(ALL_TOOLS)
    marked = required = 0
    for original, tool in zip(ALL_TOOLS, rendered, strict=True):
        params = tool["function"]["parameters"]
        for name, prop in params["properties"].items():
            is_required = name in params.get("required", [])
            required += is_required
            marked += "[required]" in prop["description"]
            assert ("[required]" in prop["description"]) == is_required, (tool["function"]["name"], name)
        assert tool["function"]["description"] == original["function"]["description"]
    assert marked == required == sum(len(t["function"]["parameters"].get("required", [])) for t in ALL_TOOLS)
    assert marked > 150


def test_type_hints_are_off_by_default_and_name_array_item_types():
    doors = _schemas("VehicleControlAPI")["lockDoors"]
    plain = InterfaceSnapshot(version="a", schema_cues=SchemaCues(enabled=True)).render_tools([doors])[0]
    typed = InterfaceSnapshot(version="b", schema_cues=SchemaCues(enabled=True, type_hints=True)).render_tools([doors])
    assert "(type:" not in json.dumps(plain)
    assert _description(typed[0], "door").endswith("rear_right (type: array of string)")
    assert _description(typed[0], "unlock").endswith("[required] (type: boolean)")


def test_system_prompt_holds_the_schema_note_and_the_guidelines(v1):
    assert v1.system_prompt() == (
        f"{SCHEMA_NOTE}\n\nGuidelines:\n"
        f"- {GUIDELINES[Label.MISSING_TOOL_CALL]}\n- {GUIDELINES[Label.SPURIOUS_TOOL_CALL]}"
    )
    only_guides = InterfaceSnapshot(
        version="g",
        capability_guidelines=CapabilityGuidelines(enabled=True, lines=(Guideline(label="pass", text="Be brief."),)),
    )
    assert only_guides.system_prompt() == "Guidelines:\n- Be brief."


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_recovery_hint_for_every_error_kind(v1, kind):
    result = ToolResult(ToolCall("cd", {"folder": "x"}), "Error: something went wrong", kind)
    assert v1.render_result(result) == f"Error: something went wrong\nHint: {RECOVERY_HINTS[kind]}"


def test_executed_ill_typed_call_gets_its_note_and_clean_results_stay_unchanged(v1):
    note = "argument 'ticket_id' must be of type integer, got string"
    typed = ToolResult(ToolCall("get_ticket", {"ticket_id": "1"}), '{"id": 1}', ErrorKind.WRONG_TYPE, True, note)
    assert v1.render_result(typed) == f'{{"id": 1}}\nNote: {note}\nHint: {RECOVERY_HINTS[ErrorKind.WRONG_TYPE]}'
    clean = ToolResult(ToolCall("pwd", {}), '{"current_working_directory": "/"}', executed=True)
    assert v1.render_result(clean) == clean.content
    only_path = InterfaceSnapshot(
        version="p", recovery_feedback=RecoveryFeedback(enabled=True, hints={"bad_path": "look around first."})
    )
    assert only_path.render_result(ToolResult(None, "E", ErrorKind.BAD_PATH)) == "E\nHint: look around first."
    assert only_path.render_result(ToolResult(None, "E", ErrorKind.TOOL_ERROR)) == "E"


def test_evaluation_sees_the_null_interface_unless_asked(v1):
    assert effective_interface(v1, training=True) is v1
    at_eval = effective_interface(v1, training=False)
    assert at_eval.is_null and at_eval.version == "v0" and at_eval.system_prompt() is None
    assert at_eval.render_tools(ALL_TOOLS[:3]) == ALL_TOOLS[:3]
    assert effective_interface(v1, training=False, keep_at_eval=True) is v1
    assert v1.train_only and InterfaceSnapshot.null().train_only
    everywhere = InterfaceSnapshot.model_validate({**v1.model_dump(exclude={"content_hash"}), "train_only": False})
    assert effective_interface(everywhere, training=False) is everywhere


def test_json_round_trip_and_a_hash_that_ignores_created_at(tmp_path, v1):
    path = v1.save(tmp_path / "v1.json")
    loaded = load_snapshot(path)
    assert loaded == v1 and loaded.content_hash == v1.content_hash
    assert loaded.cause.profile == CauseProfile.model_validate(PROFILE.to_dict())
    data = json.loads(path.read_text())
    content = {k: v for k, v in data.items() if k not in ("created_at", "content_hash")}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert data["content_hash"] == hashlib.sha256(canonical.encode()).hexdigest() == v1.content_hash
    later = InterfaceSnapshot.model_validate({**data, "created_at": "2031-01-01T00:00:00+00:00"})
    assert later.content_hash == v1.content_hash and later != v1
    renamed = InterfaceSnapshot.model_validate({**content, "version": "v9"})
    assert renamed.content_hash != v1.content_hash


def _write_edited(tmp_path: Path, snapshot: InterfaceSnapshot, edit) -> tuple[Path, bytes]:
    data = json.loads(snapshot.model_dump_json())
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path, path.read_bytes()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["rho"].update(bogus=d["rho"].pop("pass")), "field 'rho.bogus': unknown value 'bogus'"),
        (
            lambda d: d["capability_guidelines"]["lines"][0].update(label="nope"),
            "field 'capability_guidelines.lines.0.label': unknown value 'nope'",
        ),
        (
            lambda d: d["cause"]["profile"]["labels"].update(wat={"count": 1, "prevalence": 0.1, "mean_reward": 0}),
            "field 'cause.profile.labels.wat': unknown value 'wat'",
        ),
        (lambda d: d["recovery_feedback"]["hints"].update(bad_path="just retry"), "content_hash: stored"),
        (lambda d: d["rho"].update(pass_=1.0), "field 'rho.pass_'"),
        (lambda d: d.update(colour="red"), "field 'colour': Extra inputs are not permitted"),
        (lambda d: d["rho"].pop("state_mismatch"), "field 'rho': no weight for label(s) state_mismatch"),
    ],
    ids=["rho-label", "guideline-label", "cause-label", "hand-edited", "rho-typo", "extra-field", "rho-incomplete"],
)
def test_hand_edited_snapshots_are_refused_naming_file_and_field(tmp_path, v1, edit, expected):
    path, original = _write_edited(tmp_path, v1, edit)
    with pytest.raises(InterfaceError) as raised:
        load_snapshot(path)
    message = str(raised.value)
    assert message.startswith(f"interface snapshot {path}: ") and expected in message and "\n" not in message
    assert path.read_bytes() == original


def test_bad_json_and_unknown_parent_are_refused(tmp_path, v1):
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": "v1",')
    with pytest.raises(InterfaceError, match=rf"^interface snapshot {broken}: not valid JSON \(line 1\)"):
        load_snapshot(broken)
    path = v1.save(tmp_path / "v1.json")
    assert load_snapshot(path, known_versions={"v0"}) == v1
    with pytest.raises(InterfaceError, match=r"field 'parent': version 'v0' is not known \(known: v5, v7\)"):
        load_snapshot(path, known_versions={"v7", "v5"})
    with pytest.raises(InterfaceError, match=rf"^interface snapshot {tmp_path / 'absent.json'}: cannot read it"):
        load_snapshot(tmp_path / "absent.json")


def test_an_interrupted_save_leaves_the_old_file_whole(tmp_path, monkeypatch, v1):
    path = InterfaceSnapshot.null().save(tmp_path / "current.json")
    old = path.read_bytes()

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(atomic_module.os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        v1.save(path)
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["current.json"]
    monkeypatch.undo()
    monkeypatch.setattr(atomic_module.os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError("no")))
    with pytest.raises(OSError, match="no"):
        v1.save(path)
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["current.json"]
    monkeypatch.undo()
    v1.save(path)
    assert load_snapshot(path) == v1
    tampered = v1.model_copy(deep=True)
    tampered.rho[Label.PASS] = 9.0  # containers are plain dicts: a save re-checks the hash
    with pytest.raises(InterfaceError, match="content changed after it was made; not saving it"):
        tampered.save(tmp_path / "tampered.json")
    assert not (tmp_path / "tampered.json").exists()


def test_model_rules_are_enforced_on_construction():
    lines = tuple(Guideline(label=label, text="x") for label in list(Label)[:4])
    with pytest.raises(ValueError, match="at most 3 items"):
        CapabilityGuidelines(enabled=True, lines=lines)
    with pytest.raises(ValueError, match="one guideline per label"):
        CapabilityGuidelines(lines=(Guideline(label="pass", text="a"), Guideline(label="pass", text="b")))
    with pytest.raises(ValueError, match="own parent"):
        InterfaceSnapshot(version="v1", parent="v1")
    with pytest.raises(ValueError, match="String should match pattern"):
        InterfaceSnapshot(version="../escape")
    with pytest.raises(ValueError, match="weights must be positive"):
        InterfaceSnapshot(version="v1", rho={**DEFAULT_RHO, Label.PASS: 0.0})
    with pytest.raises(Exception, match="frozen"):
        InterfaceSnapshot.null().version = "v2"


def test_store_keeps_lineage_and_immutability(tmp_path, v1):
    store = SnapshotStore(tmp_path / "store")
    orphan = evolve(v1, FailureProfile(), version="v2", rho={**DEFAULT_RHO, Label.PASS: 1.1})
    with pytest.raises(InterfaceError, match="parent 'v1' of 'v2' is not stored; put the parent first"):
        store.put(orphan)
    assert store.versions() == [] and not (tmp_path / "store").exists()
    store.put(InterfaceSnapshot.null())
    store.put(v1)
    store.put(orphan)
    assert store.put(load_snapshot(store.path("v1"))) == store.path("v1")  # same content: no-op
    with pytest.raises(InterfaceError, match="version 'v1' already holds other content"):
        store.put(evolve(InterfaceSnapshot.null(), FailureProfile()))
    v10 = evolve(orphan, FailureProfile(), version="v10", rho={**DEFAULT_RHO, Label.PASS: 1.2})
    store.put(v10)
    assert store.versions() == ["v0", "v1", "v2", "v10"] and store.get("v10") == v10
    assert [s.version for s in store.lineage(v10)] == ["v0", "v1", "v2", "v10"]
    elsewhere = SnapshotStore(tmp_path / "other")  # a run that started from v2, whose ancestors it never stored
    elsewhere.put(InterfaceSnapshot.null())
    assert [s.version for s in elsewhere.lineage(v10, stored_only=True)] == ["v10"]
    with pytest.raises(InterfaceError, match="no version 'v2'"):
        elsewhere.lineage(v10)
    with pytest.raises(InterfaceError, match=r"no version 'v3' \(have: v0, v1, v2, v10\)"):
        store.get("v3")
    store.path("v10").rename(store.path("v11"))
    with pytest.raises(InterfaceError, match="field 'version': 'v10' does not match the file name"):
        store.get("v11")
    store.path("v2").unlink()
    with pytest.raises(InterfaceError, match=r"v11.json: field 'parent': version 'v2' is not known"):
        store.get("v11")


def test_diff_lists_what_appeared_went_and_moved(v1):
    null = InterfaceSnapshot.null()
    assert diff(null, null) == [] and diff(v1, v1) == []
    forward = diff(null, v1)
    assert forward[:2] == ["~ schema_cues.enabled: off -> on", f"+ note [schema]: {SCHEMA_NOTE}"]
    assert f"+ hint [bad_path]: {RECOVERY_HINTS[ErrorKind.BAD_PATH]}" in forward
    assert sum(line.startswith("+ hint [") for line in forward) == len(ErrorKind) == 13
    assert f"+ guideline [missing_tool_call]: {GUIDELINES[Label.MISSING_TOOL_CALL]}" in forward
    assert forward[-1] == "~ cause: none -> 40 rollouts, 100 turns, 4 rules"
    kinds = [str(k) for k in ErrorKind if k != ErrorKind.BAD_PATH]
    calmer = FailureProfile.from_dict(
        {
            "rollouts": 40,
            "turns": 100,
            "labels": {"missing_tool_call": {"count": 30, "prevalence": 0.3, "mean_reward": 0.2}},
        }
    )
    v2 = evolve(v1, calmer, EvolveConfig(hint_kinds=kinds), rho={**v1.rho, Label.SPURIOUS_TOOL_CALL: 1.85})
    assert diff(v1, v2) == [
        "- hint [bad_path]",
        "- guideline [spurious_tool_call]",
        "~ rho[spurious_tool_call]: 2.000 -> 1.850",
        "~ cause: 40 rollouts, 100 turns, 4 rules -> 40 rollouts, 100 turns, 4 rules",
    ]
    assert diff(v2, v1)[:2] == [
        f"+ hint [bad_path]: {RECOVERY_HINTS[ErrorKind.BAD_PATH]}",
        "+ guideline [spurious_tool_call]: " + GUIDELINES[Label.SPURIOUS_TOOL_CALL],
    ]


def test_cli_show_and_diff(tmp_path, capsys, v1):
    a = InterfaceSnapshot.null().save(tmp_path / "v0.json")
    b = v1.save(tmp_path / "v1.json")
    assert main(["interface", "show", str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        "interface v1  parent v0  suite bfcl  train-only yes",
        f"content hash {v1.content_hash}",
        f"created {v1.created_at}",
    ]
    assert "schema cues: on (mark_required on, enum_values on, type_hints off)" in out
    assert "recovery feedback: on, 13 hint(s)" in out and "capability guidelines: on, 2 line(s)" in out
    assert "  spurious_tool_call   2.000" in out and "cause: failure profile of 40 rollouts, 100 labelled turns" in out
    assert "  missing_tool_call    count    25  prevalence 0.250  mean reward 0.300" in out
    assert out[-1].startswith("  rule: guideline[spurious_tool_call]: prevalence 0.120 >= 0.10, count 12 >= 8")
    assert main(["interface", "diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"--- {a} (v0, {InterfaceSnapshot.null().content_hash[:12]})"
    assert out[1] == f"+++ {b} (v1, {v1.content_hash[:12]})"
    assert out[2:] == diff(InterfaceSnapshot.null(), v1)
    assert main(["interface", "diff", str(a), str(a)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "no differences"


def test_cli_bad_snapshot_file_is_a_one_line_error(tmp_path, capsys, v1):
    path, _ = _write_edited(tmp_path, v1, lambda d: d["rho"].update(spurious_tool_call=1.0))
    assert main(["interface", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"seal-hub: error: interface snapshot {path}: content_hash: stored")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["interface", "diff", str(tmp_path / "missing.json"), str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"seal-hub: error: interface snapshot {tmp_path / 'missing.json'}: ")
