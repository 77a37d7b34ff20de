"""Threads: every run belongs to one. Existing runs each get a thread of their own."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def one_thread_per_run(apps, schema_editor):
    QueryRun = apps.get_model("ragapp", "QueryRun")
    Thread = apps.get_model("ragapp", "Thread")
    for run in QueryRun.objects.filter(thread__isnull=True).iterator():
        thread = Thread.objects.create(owner_id=run.owner_id, title=run.query[:200])
        # auto_now_add stamped "now": the thread dates from its run.
        Thread.objects.filter(pk=thread.pk).update(
            created_at=run.created_at, updated_at=run.created_at
        )
        QueryRun.objects.filter(pk=run.pk).update(thread=thread)


class Migration(migrations.Migration):
    # Not one transaction: PostgreSQL refuses to make the column NOT NULL in the transaction
    # that filled it ("pending trigger events"). The backfill is its own transaction.
    atomic = False

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("ragapp", "0006_retrieval_scale"),
    ]

    operations = [
        migrations.CreateModel(
            name="Thread",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("title", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("updated_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                (
                    "owner",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="threads",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-updated_at"],
                "indexes": [
                    models.Index(fields=["owner", "-updated_at"], name="thread_owner_updated")
                ],
            },
        ),
        migrations.AddField(
            model_name="queryrun",
            name="thread",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="runs",
                to="ragapp.thread",
            ),
        ),
        migrations.RunPython(one_thread_per_run, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="queryrun",
            name="thread",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="runs",
                to="ragapp.thread",
            ),
        ),
    ]
