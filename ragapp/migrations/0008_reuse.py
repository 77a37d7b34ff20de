"""Answer reuse: the knowledge base's version, and on each run its version, query hash and source.

No backfill: a run from before has no version, so it is never reused, which is the safe side.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ragapp", "0007_threads"),
    ]

    operations = [
        migrations.AddField(
            model_name="embeddingindex",
            name="version",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="queryrun",
            name="query_hash",
            field=models.CharField(blank=True, db_index=True, max_length=64),
        ),
        migrations.AddField(
            model_name="queryrun",
            name="kb_version",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="queryrun",
            name="reused_from",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="reuses",
                to="ragapp.queryrun",
            ),
        ),
    ]
