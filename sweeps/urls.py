from django.urls import path

from sweeps.views import audits, compare, downloads, launch, questions, scenarios, sweep

app_name = "sweeps"
urlpatterns = [
    path("", launch.sweep_list, name="list"),
    path("sweeps/launch/", launch.sweep_launch, name="launch"),
    path("sweeps/plan/", launch.sweep_plan, name="plan"),
    path("sweeps/<int:sweep_id>/", sweep.sweep_detail, name="detail"),
    path("sweeps/<int:sweep_id>/progress/", sweep.sweep_progress, name="progress"),
    path("sweeps/<int:sweep_id>/resume/", sweep.sweep_resume, name="resume"),
    path("sweeps/<int:sweep_id>/cancel/", sweep.sweep_cancel, name="cancel"),
    path("sweeps/<int:sweep_id>/delete/", sweep.sweep_delete, name="delete"),
    path("sweeps/<int:sweep_id>/edit/", sweep.sweep_edit, name="edit"),
    path("sweeps/<int:sweep_id>/heatmap/", scenarios.heatmap, name="heatmap"),
    path("sweeps/<int:sweep_id>/scenarios/", scenarios.scenario_list, name="scenarios"),
    path("sweeps/<int:sweep_id>/questions/", questions.sweep_questions, name="sweep_questions"),
    path("sweeps/<int:sweep_id>/questions/answer-all/", questions.questions_answer_all, name="answer_all"),
    path("sweeps/<int:sweep_id>/export/table.<str:fmt>", downloads.export_table, name="export_table"),
    path("sweeps/<int:sweep_id>/export/scenarios.<str:fmt>", downloads.export_scenarios, name="export_scenarios"),
    path("exports/<int:export_id>/", downloads.export_detail, name="export"),
    path("exports/<int:export_id>/file", downloads.export_file, name="export_file"),
    path("scenarios/<int:scenario_id>/", scenarios.scenario_detail, name="scenario"),
    path("questions/", questions.question_list, name="questions"),
    path("questions/<int:question_id>/answer/", questions.question_answer, name="answer"),
    path("audits/", audits.audit_list, name="audits"),
    path("audits/<int:audit_id>/", audits.audit_detail, name="audit"),
    path("audits/<int:audit_id>/resume/", audits.audit_resume, name="audit_resume"),
    path("witness/", scenarios.witness, name="witness"),
    path("compare/", compare.compare, name="compare"),
    path("compare/export.csv", compare.compare_export, name="compare_export"),
]
