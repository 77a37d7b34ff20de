"""An evaluation records the questions it asks, so that `eval_rag --resume` can finish it.

Evaluations from before it record none and cannot be resumed; their reports are unchanged.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("ragapp", "0011_hnsw_ef_construction")]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="selection",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="recall@k's k and the golden ids asked, in order.",
            ),
        ),
    ]
