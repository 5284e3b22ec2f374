from django.urls import path

from sweeps import views

app_name = "sweeps"
urlpatterns = [
    path("", views.sweep_list, name="list"),
    path("sweeps/launch/", views.sweep_launch, name="launch"),
    path("sweeps/plan/", views.sweep_plan, name="plan"),
    path("sweeps/<int:sweep_id>/", views.sweep_detail, name="detail"),
    path("sweeps/<int:sweep_id>/progress/", views.sweep_progress, name="progress"),
    path("sweeps/<int:sweep_id>/resume/", views.sweep_resume, name="resume"),
    path("sweeps/<int:sweep_id>/cancel/", views.sweep_cancel, name="cancel"),
    path("sweeps/<int:sweep_id>/delete/", views.sweep_delete, name="delete"),
    path("sweeps/<int:sweep_id>/edit/", views.sweep_edit, name="edit"),
    path("sweeps/<int:sweep_id>/heatmap/", views.heatmap, name="heatmap"),
    path("sweeps/<int:sweep_id>/scenarios/", views.scenario_list, name="scenarios"),
    path("sweeps/<int:sweep_id>/questions/", views.sweep_questions, name="sweep_questions"),
    path("sweeps/<int:sweep_id>/questions/answer-all/", views.questions_answer_all, name="answer_all"),
    path("sweeps/<int:sweep_id>/export/table.<str:fmt>", views.export_table, name="export_table"),
    path("sweeps/<int:sweep_id>/export/scenarios.<str:fmt>", views.export_scenarios, name="export_scenarios"),
    path("scenarios/<int:scenario_id>/", views.scenario_detail, name="scenario"),
    path("questions/", views.question_list, name="questions"),
    path("questions/<int:question_id>/answer/", views.question_answer, name="answer"),
    path("compare/", views.compare, name="compare"),
    path("compare/export.csv", views.compare_export, name="compare_export"),
]
