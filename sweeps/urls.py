app_name = "sweeps"
urlpatterns: list = []
