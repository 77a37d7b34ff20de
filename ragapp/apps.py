from django.apps import AppConfig


class RagappConfig(AppConfig):
    name = "ragapp"
    verbose_name = "Documentation assistant"
