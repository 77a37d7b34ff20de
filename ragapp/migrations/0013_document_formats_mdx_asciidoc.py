"""Documents may be MDX or AsciiDoc pages (ingestion/loaders/mdx.py, asciidoc.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ragapp", "0012_evaluation_selection"),
    ]

    operations = [
        migrations.AlterField(
            model_name="document",
            name="format",
            field=models.CharField(
                choices=[
                    ("markdown", "Markdown"),
                    ("mdx", "MDX"),
                    ("rst", "reStructuredText"),
                    ("asciidoc", "AsciiDoc"),
                    ("html", "HTML"),
                    ("text", "Plain text"),
                    ("pdf", "PDF"),
                    ("docx", "Word (DOCX)"),
                ],
                max_length=16,
            ),
        ),
    ]
