"""The HNSW index rebuilt with ef_construction 128 (it was pgvector's default, 64).

Hand-written. Nothing is re-embedded: the index is rebuilt from the stored vectors, as 0006 did.
At a million synthetic chunks the better graph found 0.963-1.000 of the true top 10 at
ef_search 200 (three builds) where the old one found 0.81-0.94 (docs/performance.md). The rebuild
takes about as long as an ingest's own build: 240-290 s for 1M chunks on two cores, a second for
a few thousand. A knowledge
base with no recorded embedding model has no index yet; its first ingest builds it this way.
"""

from django.db import migrations

INDEX_NAME = "chunk_embedding_hnsw"


def _rebuild(ef_construction):
    def rebuild(apps, schema_editor):
        index = apps.get_model("ragapp", "EmbeddingIndex").objects.first()
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [INDEX_NAME])
            if index is None or not cursor.fetchone()[0]:
                return
            cursor.execute(f"DROP INDEX {INDEX_NAME}")
            cursor.execute(
                f"CREATE INDEX {INDEX_NAME} ON ragapp_chunk USING hnsw "
                f"((embedding::halfvec({int(index.dimensions)})) halfvec_cosine_ops) "
                f"WITH (m = 16, ef_construction = {ef_construction})"
            )

    return rebuild


class Migration(migrations.Migration):
    dependencies = [
        ("ragapp", "0010_bm25_champions"),
    ]

    operations = [
        migrations.RunPython(_rebuild(128), _rebuild(64)),
    ]
