"""Sources link to the published docs, and keep the link they had when the run ran."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from ragapp.models import Chunk, QueryRun

BASE = "https://docs.example.com/"


def ingest(path, *args):
    call_command("ingest_docs", str(path), *args, stdout=StringIO(), stderr=StringIO())


# Events are published after their rows commit; a real transaction lets that happen here.
@pytest.mark.django_db(transaction=True)
def test_ask_the_api_and_the_run_show_the_public_link_and_keep_it(
    tmp_path, fake_chat, client, users
):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "guide.md").write_text(
        "# Guide\n\n## Restart the worker\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    ingest(tmp_path, "--base-url", BASE)
    out = StringIO()
    call_command("ask", "How do I restart the worker?", stdout=out)
    link = BASE + "ops/guide.html#restart-the-worker"
    assert f"[1] {link} > Guide > Restart the worker" in out.getvalue()
    assert str(tmp_path) not in out.getvalue()  # no absolute server path, anywhere

    run = QueryRun.objects.get()
    QueryRun.objects.filter(pk=run.pk).update(owner=users["owner"])
    [source] = run.response_metadata["sources"]
    assert (source["source_path"], source["url"]) == ("ops/guide.md", link)

    ingest(tmp_path, "--base-url", "https://moved.example.com/")  # the site moves later
    client.force_login(users["owner"])
    body = client.get(reverse("api-run-detail", args=[run.pk])).json()
    [shown] = body["sources"]
    assert (shown["source_path"], shown["url"]) == ("ops/guide.md", link)  # as when it ran
    assert str(tmp_path) not in str(body)
    events = client.get(reverse("api-run-events", args=[run.pk])).json()
    assert str(tmp_path) not in str(events)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert f'href="{link}"' in page


@pytest.mark.django_db
def test_a_chunk_page_shows_the_server_path_to_staff_only(tmp_path, client, users):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "guide.md").write_text("# Guide\n\nRestart the worker.\n")
    ingest(tmp_path)
    chunk = Chunk.objects.get()
    url = reverse("chunk-detail", args=[chunk.pk])

    client.force_login(users["owner"])
    page = client.get(url).content.decode()
    assert "ops/guide.md" in page
    assert str(tmp_path) not in page  # not even in a tooltip

    client.force_login(users["staff"])
    assert str(tmp_path) in client.get(url).content.decode()
