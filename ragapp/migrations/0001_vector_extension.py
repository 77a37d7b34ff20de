"""Create the pgvector extension, or explain clearly why it cannot be."""

from django.db import migrations

MISSING_PGVECTOR = (
    "The PostgreSQL server at {where} does not have the pgvector extension available, and this "
    "product stores embeddings in it. Install pgvector on that server (for example use the "
    "pgvector/pgvector Docker image, or `apt install postgresql-<version>-pgvector`), or unset "
    "DATABASE_URL to use the embedded PostgreSQL that ships with pgvector."
)


class CreatePgvectorExtension(migrations.RunSQL):
    """CREATE EXTENSION vector, after checking that the server has it installed."""

    def __init__(self):
        super().__init__(
            "CREATE EXTENSION IF NOT EXISTS vector", reverse_sql=migrations.RunSQL.noop
        )

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if cursor.fetchone() is None:
                params = schema_editor.connection.get_connection_params()
                where = f"{params.get('host') or 'localhost'}/{params.get('dbname')}"
                raise RuntimeError(MISSING_PGVECTOR.format(where=where))
        super().database_forwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [CreatePgvectorExtension()]
