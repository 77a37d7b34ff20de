"""`manage.py embedded_db status|stop`: look after the embedded PostgreSQL server."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.embedded_postgres import server_status, stop_server


class Command(BaseCommand):
    help = (
        "Show or stop the embedded PostgreSQL server of RAG_DATA_DIR. It keeps running after the "
        "app exits so the next start is instant; any command that needs the database restarts it."
    )

    # System checks connect to the database (GeneratedField asks for its version), which would
    # start the very server this command is asked to look at or stop.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status", "stop"])

    def handle(self, *args, action, **options):
        if settings.DATABASES["default"]["ENGINE"] != "config.db_backend":
            raise CommandError(
                "DATABASE_URL is set: this process does not use the embedded server."
            )
        data_dir = settings.DATABASES["default"]["DATA_DIR"]
        if action == "stop":
            stopped = stop_server(data_dir)
            self.stdout.write("Stopped." if stopped else "It was not running.")
        self.stdout.write(server_status(data_dir))
