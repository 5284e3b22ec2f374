"""One scenario schema: a stored Scenario row is one agentcore ScenarioRecord.

Rules:
- Every field list is derived from `agentcore.records.ScenarioRecord`'s fields (dataclasses.fields),
  in its order, except that the third point's (depth 3: agentcore puts them last, so that a depth-2
  record keeps its shape) follow the second point's; no module retypes them. A depth-1 or 2 sweep's
  exports leave them out (TWICE_FIELDS), as agentcore's records do.
- `record_row` turns a record into a row (INSERT parameters, a tuple: ~10,000 per sweep), and
  `row_fields` / `row_record` turn a stored row back into a record's fields: storage, selectors,
  exports and `manage.py sweep` go through these two directions and no other.
- A once scenario's second point, kind and label are stored as 0, "" and "" (NULLs would not collide
  in the unique identity) and read back as None; so are a once or twice scenario's third point's.
  A waiting scenario's outcome (duplicates to calls_plus) is stored as 0 and read back as None: its
  tallies so far are no outcome (it has not made its calls yet: its calls+ would be negative).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from agentcore import ScenarioRecord
from sweeps.limits import JOB_NAME_CHARS, LABEL_CHARS

_ALL = tuple(f.name for f in fields(ScenarioRecord))
THIRD_FIELDS = tuple(f for f in _ALL if f.startswith("third_"))
_STATUS = _ALL.index("status")
# The record's JSON fields (filled when asked for): never read by lists and exports.
JSON_FIELDS = tuple(f for f in _ALL[_STATUS + 1 :] if f not in THIRD_FIELDS)  # timeline, effects
# The record's other fields, the third point's after the second's: what a scenario row exports.
_SECOND_END = _ALL.index("second_label") + 1
RECORD_FIELDS = (*_ALL[:_SECOND_END], *THIRD_FIELDS, *_ALL[_SECOND_END : _STATUS + 1])
# What a depth-1 or depth-2 sweep's scenario row exports: no third point.
TWICE_FIELDS = tuple(f for f in RECORD_FIELDS if f not in THIRD_FIELDS)
# What happened in the scenario (the rest says which scenario it is).
OUTCOME_FIELDS = RECORD_FIELDS[RECORD_FIELDS.index("duplicates") : RECORD_FIELDS.index("status")]
SECOND_FIELDS = ("second_point", "second_kind", "second_label")
# A row's columns (attnames) as record_row gives their values: where it belongs, then the record.
SCENARIO_COLUMNS = ("sweep_id", "config", *RECORD_FIELDS, *JSON_FIELDS)
# The columns a scenario list or export reads: never the JSON columns.
LIST_FIELDS = ("id", "sweep_id", "config", *RECORD_FIELDS)
# A sweep's scenarios in the order agentcore's records come in (a once scenario, then each twice
# scenario followed by its thrice ones), as the identity's index has them.
SCENARIO_ORDER = ("config", "first_point", "second_point", "third_point")
WAITING = "waiting"
_STORED_SECOND = {
    "second_point": 0,
    "second_kind": "",
    "second_label": "",
    "third_point": 0,
    "third_kind": "",
    "third_label": "",
}
_CHARS = {"job": JOB_NAME_CHARS, "first_label": LABEL_CHARS, "second_label": LABEL_CHARS, "third_label": LABEL_CHARS}


def outcome(r: ScenarioRecord) -> dict[str, int]:
    """A record's outcome as stored: 0s for a waiting scenario (see the rules)."""
    if r.status == WAITING:
        return dict.fromkeys(OUTCOME_FIELDS, 0)
    return {f: getattr(r, f) for f in OUTCOME_FIELDS}


def record_row(
    sweep_id: int, config: int, r: ScenarioRecord, json_values: tuple[Any, Any] = (None, None)
) -> tuple[Any, ...]:
    """An agentcore record as a row's values in SCENARIO_COLUMNS order. `json_values` are the
    timeline and effects as the database takes them (prepared by the caller), or Nones."""
    stored = outcome(r)
    values = []
    for f in RECORD_FIELDS:
        v = stored[f] if f in stored else getattr(r, f)
        if v is None and f in _STORED_SECOND:
            v = _STORED_SECOND[f]
        values.append(v[: _CHARS[f]] if f in _CHARS else v)
    return (sweep_id, config, *values, *json_values)


def row_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row's values (by column name) as a record's fields, in RECORD_FIELDS order (see the
    rules: second_* None in a once scenario, third_* in all but thrice ones, the outcome None in a
    waiting one)."""
    out = {f: values[f] for f in RECORD_FIELDS}
    if not out["second_point"]:
        out.update(dict.fromkeys(SECOND_FIELDS))
    if not out["third_point"]:
        out.update(dict.fromkeys(THIRD_FIELDS))
    if out["status"] == WAITING:
        out.update(dict.fromkeys(OUTCOME_FIELDS))
    return out


def row_record(values: Mapping[str, Any], timeline: Any = None, effects: Any = None) -> ScenarioRecord:
    """A stored row as the agentcore record it was stored from (with a timeline and effects if given)."""
    return ScenarioRecord(**row_fields(values), timeline=timeline, effects=effects)


def instance_values(scenario: Any) -> dict[str, Any]:
    """A Scenario instance's record fields by name (for row_fields / row_record)."""
    return {f: getattr(scenario, f) for f in RECORD_FIELDS}
