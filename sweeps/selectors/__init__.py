"""Every read the pages, exports and commands need. No writes here (those are in sweeps/services/).

Split by concern: tables (a sweep's table, live or final, and two compared), progress (the list,
a sweep's state, progress, ETA and rate), scenarios (heatmap cells, scenario lists and exports, the
question queues) and audits. Importers name this package (`from sweeps import selectors`,
`selectors.sweep_table`): its names are the submodules' public ones.
"""

from __future__ import annotations

from sweeps.selectors.audits import audit_job, audit_list, audit_report, audit_subjects
from sweeps.selectors.progress import (
    SweepState,
    measured_rate,
    sweep_contents,
    sweep_get,
    sweep_list,
    sweep_progress,
    sweep_state,
)
from sweeps.selectors.scenarios import (
    METRICS,
    heatmap_config_first,
    heatmap_first_second,
    heatmap_third,
    page_scenarios,
    point_labels,
    question_counts,
    question_durables,
    question_list,
    scenario_export_rows,
    scenario_filter,
    scenario_get,
    scenario_page,
    scenario_pager,
    scenario_totals,
)
from sweeps.selectors.tables import (
    ANSWER_DEPENDENT,
    compare_choices,
    compare_tables,
    row_configs,
    same_job,
    sampled_rates,
    sweep_compare,
    sweep_table,
    sweep_table_live,
    sweep_table_rows,
    table_columns,
    waiting_by_config,
)

__all__ = [
    "ANSWER_DEPENDENT",
    "METRICS",
    "SweepState",
    "audit_job",
    "audit_list",
    "audit_report",
    "audit_subjects",
    "compare_choices",
    "compare_tables",
    "heatmap_config_first",
    "heatmap_first_second",
    "heatmap_third",
    "measured_rate",
    "page_scenarios",
    "point_labels",
    "question_counts",
    "question_durables",
    "question_list",
    "row_configs",
    "same_job",
    "sampled_rates",
    "scenario_export_rows",
    "scenario_filter",
    "scenario_get",
    "scenario_page",
    "scenario_pager",
    "scenario_totals",
    "sweep_compare",
    "sweep_contents",
    "sweep_get",
    "sweep_list",
    "sweep_progress",
    "sweep_state",
    "sweep_table",
    "sweep_table_live",
    "sweep_table_rows",
    "table_columns",
    "waiting_by_config",
]
