"""The names a question gives as the user's own."""

import pytest

from ragapp.graph.own_names import own_names, own_object_starts


@pytest.mark.parametrize(
    ("question", "names"),
    [
        # A path, its parts: in plain text, in a code span, Windows' backslashes.
        (
            "I committed secrets/api_keys.txt.",
            {"secrets/api_keys.txt", "/api_keys.txt", "secrets", "api_keys.txt"},
        ),
        (
            "Dump to /backups/db.sql, fast.",
            {"/backups/db.sql", "backups/db.sql", "/db.sql", "backups", "db.sql"},
        ),
        (
            "Does `./data/config.json` load?",
            {
                "./data/config.json",
                "/data/config.json",
                "data/config.json",
                "/config.json",
                "config.json",
                ".",
                "data",
            },
        ),
        (
            "History of C:\\work\\db_utils.py?",
            {
                "c:\\work\\db_utils.py",
                "\\work\\db_utils.py",
                "work\\db_utils.py",
                "\\db_utils.py",
                "c:",
                "work",
                "db_utils.py",
            },
        ),
        # An object named after its kind, or after an SQL keyword in capitals.
        ("VACUUM on my table `user_events` is slow.", {"user_events"}),
        ("Grant the role report_reader access.", {"report_reader"}),
        ("Why is SELECT * FROM page_views slow?", {"page_views"}),
        # The strings of the user's code are theirs; its functions and arguments are not.
        (
            "Why does `subprocess.run(['pg_dump', 'my db'], stdout=f)` fail?",
            {"pg_dump", "my db", "my", "db"},
        ),
        ("Does `json.dumps(d, sort_arrays=True)` work?", set()),
        # What the user calls theirs ("my", "our"), whatever its kind.
        ("My logger `app.worker` logs twice.", {"app.worker"}),
        ("Our dataclass Order needs a total.", {"order"}),
        # A product's kinds are not the user's, not even after "my"; nor is "from" in prose an
        # SQL keyword.
        ("Can the extension pg_cron run?", set()),
        ("Is my setting wal_keep_segments ignored?", set()),
        ("Can I get support from EnterpriseDB?", set()),
    ],
)
def test_own_names(question, names):
    assert own_names(question) == names


def test_a_name_is_introduced_as_the_users_by_its_kind():
    question = "Our replica db-replica-02 lags; does pg_basebackup help?"
    assert own_object_starts(question) == {question.index("db-replica-02")}
