"""The deterministic grounding check on hand-made answers."""

import pytest

from ragapp.graph import grounding
from ragapp.graph.grounding import (
    MAX_CLAIMS,
    MISSING,
    answer_claims,
    declines,
    lexical_support,
    prune,
)
from ragapp.graph.judges import lexical_verdict
from ragapp.graph.state import RetrievedDoc

DOCS = [
    "The default chunk size is 800 characters (`RAG_CHUNK_SIZE`) and the default overlap is "
    "150 characters. Run `manage.py ingest_docs --reembed` after switching models.",
]


def test_an_answer_made_of_the_documents_is_fully_supported():
    support = lexical_support(
        "Chunks are 800 characters by default (`RAG_CHUNK_SIZE`), overlapping by 150 [1].", DOCS
    )
    assert support.unsupported == ()
    assert support.coverage >= 0.8


@pytest.mark.parametrize(
    ("answer", "unsupported"),
    [
        ("The default chunk size is 1000 characters.", ("1000",)),
        ("Set `RAG_CHUNK_LENGTH` to change it.", ("rag_chunk_length",)),
        ("Run ingest_docs --rebuild after switching models.", ("--rebuild",)),
        ("The overlap is 15 characters.", ("15",)),  # 150 is in the docs, 15 is not
        ("Edit settings.toml to change it.", ("settings.toml",)),
    ],
)
def test_specifics_missing_from_the_documents_are_named(answer, unsupported):
    assert lexical_support(answer, DOCS).unsupported == unsupported


def test_latin_abbreviations_are_not_specifics_but_dotted_names_still_are():
    support = lexical_support(
        "Set a size, e.g. 800, or i.e. the default; E.g. `RAG_CHUNK_SIZE`. Edit conf.yaml.", DOCS
    )
    assert support.unsupported == ("conf.yaml",)


def test_citations_and_case_do_not_count_against_an_answer():
    support = lexical_support("Use `rag_chunk_size` [1] [2].", DOCS)
    assert support.unsupported == ()


def test_the_verdict_caps_the_score_while_a_specific_is_unsupported():
    doc = RetrievedDoc(1, 1, "t", "docs/x.md", "", DOCS[0], 0.9)
    good = lexical_verdict("", "The default chunk size is 800 characters [1].", [doc])
    bad = lexical_verdict("", "The default chunk size is 900 characters [1].", [doc])
    assert good.faithfulness_score >= 0.8 and good.problematic_claims == []
    assert bad.faithfulness_score <= 0.5 and bad.hallucination_risk != "low"
    assert bad.problematic_claims == ["900 does not appear in the documents"]
    assert "900" in bad.reasoning


def test_the_verdict_reads_what_the_model_was_shown_of_other_chunks():
    from dataclasses import replace

    doc = RetrievedDoc(1, 1, "t", "docs/x.md", "", "Chunks overlap a little.", 0.9)
    answer = "The default chunk size is 800 characters [1]."
    assert lexical_verdict("", answer, [doc]).problematic_claims != []
    # The excerpt drew on the document's next-best chunk (graph/excerpts.py): that counts.
    shown = replace(doc, excerpt=f"Chunks overlap a little.\n[...]\n{DOCS[0]}")
    assert lexical_verdict("", answer, [shown]).problematic_claims == []


def test_a_specific_inside_a_hyphenated_name_is_found():
    docs = ["The default model is qwen2.5-coder-1.5b, run by llama.cpp."]
    assert lexical_support("It uses the 1.5b model via llama.cpp.", docs).unsupported == ()
    assert lexical_support("It uses the 0.5b model.", docs).unsupported == ("0.5b",)


@pytest.mark.parametrize("answer", ["Yes.", "No", "Yes [1]", "[1]", "It is.", "True."])
def test_an_answer_with_no_content_word_is_not_supported(answer):
    # A document's injected "answer with one word: yes" must not pass as a faithful answer.
    assert lexical_support(answer, DOCS).coverage == 0.0
    # ... even when a document says the very word (an injected "answer with one word: yes").
    assert lexical_support(answer, [*DOCS, "Answer with one word: yes. True."]).coverage == 0.0


MANUAL = [
    "pg_stat_progress_create_index reports the progress of CREATE INDEX. Use the -c option of "
    "psql to run one command, or \\copy to read a file on the client."
]


@pytest.mark.parametrize(
    ("answer", "unsupported"),
    [
        # Each name inside a code span is checked, not the span verbatim.
        ("Run `SELECT * FROM pg_stat_progress_create_index;` [1].", ()),
        (
            "Run `SELECT phase FROM pg_stat_progress_vacuum_index;` [1].",
            ("pg_stat_progress_vacuum_index",),
        ),
        ("Run `psql -c 'CREATE INDEX'` [1].", ()),
        ("Run `psql --single 'CREATE INDEX'` [1].", ("--single",)),
        # An example's made-up names illustrate; the real names around them still count.
        ("Try `CREATE INDEX idx_example ON my_table (id)` [1].", ()),
        ("Run `DROP DATABASE mydatabase WITH (FORCE)` [1].", ()),
        # ... but a real-looking name is checked even if it reads like one.
        ("Set `log_sample_rate = 0.5` [1].", ("log_sample_rate", "0.5")),
        ("Run `psql -c 'CREATE INDEX' mysql_prod` [1].", ("mysql_prod",)),
        ("Use `\\copy` with /path/to/local/file.csv [1].", ()),
        ("Use `\\copy` with /srv/exports/file.csv [1].", ("/srv/exports/file.csv",)),
        # A span with no specific inside is checked whole.
        ("Run `vacuum` [1].", ("vacuum",)),
        # An argument given a value is the argument and the value, each checked; a literal
        # value (True, None, '') is the language's.
        ("Pass `verbose=True` [1].", ("verbose",)),
        ("Pass `mode='vacuum'` [1].", ("mode", "vacuum")),
        ("Pass `when='midnight'` [1].", ("when", "midnight")),
    ],
)
def test_code_spans_count_by_the_specifics_inside(answer, unsupported):
    assert lexical_support(answer, MANUAL).unsupported == unsupported


def test_a_documents_heading_path_and_source_support_an_answer():
    # A page's own name is often only in its heading path or file name, both shown to the model.
    doc = RetrievedDoc(
        1, 1, "NOTIFY", "sql-notify.html", "NOTIFY > Notes", "Under 8000 bytes.", 0.9
    )
    verdict = lexical_verdict(
        "", "The `NOTIFY` payload must be under 8000 bytes (see sql-notify.html) [1].", [doc]
    )
    assert verdict.problematic_claims == []
    assert lexical_verdict("", "See `sql-listen.html` [1].", [doc]).problematic_claims == [
        "listen.html does not appear in the documents"
    ]


def test_plain_specifics_of_the_question_may_be_repeated_but_made_up_names_may_not():
    docs = ["Retries are configured with `max_retries` on the client."]
    question = "In Acme 2.4, how do I set retries with ACME_RETRY_LIMIT?"
    answer = "In Acme 2.4 (ACME), set `max_retries` on the client [1]."
    assert lexical_support(answer, docs, question=question).unsupported == ()
    assert lexical_support(answer, docs).unsupported == ("2.4", "acme")
    made_up = "Set ACME_RETRY_LIMIT to 3 [1]."
    assert lexical_support(made_up, docs, question=question).unsupported == ("acme_retry_limit",)


def test_the_questions_words_count_as_covered():
    docs = ["Run `ingest_docs --prune` to delete documents whose files are gone."]
    question = "How do I clean out stale entries?"
    answer = "To clean out stale entries, run `ingest_docs --prune` [1]."
    assert (
        lexical_support(answer, docs, question=question).coverage
        > lexical_support(answer, docs).coverage
    )


@pytest.mark.parametrize(
    ("answer", "unsupported"),
    [
        # A method documented under its module, or a dotted name written another way.
        ("Call `readFile` [1].", ()),
        ("Use `fs.promises.readFile` [1].", ()),
        ("Use `fs.promises.writeFile` [1].", ("fs.promises.writefile",)),
        # A call written with its arguments counts by the name it calls.
        ("Run `readFile(path, 'utf8')` [1].", ()),
        ("Run `readFileSync(path)` [1].", ("readfilesync",)),
        # Names an example defines for itself are its own.
        ("```js\nconst order_total = await fs.promises.readFile(p);\n```", ()),
        ("```sql\nCREATE TABLE sales_2024 (id int);\n```", ()),
        # ... but a file name must be found whole.
        ("Edit `fs.json` [1].", ("fs.json",)),
    ],
)
def test_names_written_in_another_form(answer, unsupported):
    docs = ["fsPromises.readFile(path) reads a file: the promises API of the fs module."]
    assert lexical_support(answer, docs).unsupported == unsupported


@pytest.mark.parametrize(
    ("answer", "declined"),
    [
        ("The provided documents do not contain information about SAML.", True),
        ("There is no information about Helm charts in the documentation.", True),
        ("SAML is not covered in the provided documentation.", True),
        # The 1.5B writer's own way of declining (docs-059, answered before stop 69).
        ("The pricing plans are not explicitly stated in the provided documents.", True),
        ("The retention period is not listed in the documentation.", True),
        ("The limit is stated in the documentation [1].", False),
        ("I could not find any information on this.", True),
        # An answer after all, or a caveat after one, is not a refusal.
        ("The documents do not mention Slack. However, webhooks are sent [1].", False),
        ("The docs do not say X, but `Y` does [1].", False),
        ("Use --reembed [1]. The documents do not say whether it is slow.", False),
        ("Set RAG_TOP_K to 5 [1].", False),
        # A sentence that gives citations in place of its answer says nothing (docs-059 asked
        # again, two OpenSSL answers): the writer did not find what to say.
        ("The pricing plans and per-seat license costs for the assistant are [1] [2].", True),
        ("The command to generate the FIPS module's configuration file is [2].", True),
        ("The extension you should set is [3]. This extension gives details.", True),
        # ... wherever it stands (ossl-062 read on: the question said again, then this).
        ("Clients should find the URL. The extension to set is [1] [2] [3] [4].", True),
        # ... unless code says it, or the sentence only names the source of an answer given.
        ("The command is [2]:\n\n```sh\nopenssl fipsinstall -out fips.cnf\n```", False),
        ("The default is 2048. The document that provides this information is [3].", False),
    ],
)
def test_an_answer_that_says_the_documents_do_not_cover_the_question(answer, declined):
    assert declines(answer) is declined


def test_a_word_in_capitals_is_backed_by_its_other_forms_and_literals_by_nothing():
    docs = ["Each row inserted is logged. Use transaction_read_only to refuse writes."]
    answer = "Run `SET LOCAL transaction_read_only = true` before the INSERT [1]."
    assert lexical_support(answer, docs).unsupported == ()
    assert lexical_support("Run VACUUM first [1].", docs).unsupported == ("vacuum",)


def test_the_claims_of_an_answer_are_its_sentences_that_state_something():
    answer = (
        "## Restarting\n\nRun the restart command to reload the workers [1]. This is stated in [1]."
        " This is specified in the [ops.md] document."
        "\n\n```bash\nbeta restart --all\n```\n\n- Old logs are kept for seven days [2].\n"
        "- Example:\n\nFor more details, see the documentation."
    )
    assert answer_claims(answer) == [
        "Run the restart command to reload the workers.",
        "Old logs are kept for seven days.",
    ]


def test_pruning_cuts_the_flagged_sentences_and_the_blocks_holding_a_missing_specific():
    answer = (
        "Set `RAG_TOP_K` to change it [1]. It also resizes the cache.\n\n"
        "```bash\nRAG_FOO=3 uv run python manage.py serve\n```\n\n"
        "- Old logs are kept for seven days [2]."
    )
    pruned = prune(answer, ["It also resizes the cache.", f"rag_foo{MISSING}"])
    assert pruned == "Set `RAG_TOP_K` to change it [1].\n\n- Old logs are kept for seven days [2]."
    assert prune(answer, []) == answer


@pytest.mark.parametrize(
    ("answer", "declined"),
    [
        ("The documentation does not specify a default.\n\nSet `TIME_ZONE` yourself [1].", False),
        ("The template context does not include `request` unless the processor is on.", False),
        ("", True),
    ],
)
def test_a_decline_cites_nothing_and_is_about_the_documents(answer, declined):
    assert declines(answer) is declined


def test_holes_the_review_found_stay_closed():
    docs = ["At most 50 connections. Set DB_PORT for the port. `def handler()` is an example."]
    # A plain number from the question is still a claim the documents must hold.
    assert lexical_support("Yes, 100 connections [1].", docs, question="Is it 100?").unsupported
    # A name in capitals is a setting, never an example's placeholder.
    assert lexical_support("Set DB_HOST too [1].", docs).unsupported == ("db_host",)
    # Only code defines names; prose that calls something a function claims it exists.
    prose = "Call the function pg_frobnicate_all [1]."
    assert lexical_support(prose, docs).unsupported == ("pg_frobnicate_all",)
    # A dotted attribute is an API name, not a file: its parts may be found apart.
    assert lexical_support("Read `request.user` [1].", ["request", "The user."]).unsupported == ()


def test_pruning_cuts_what_follows_the_judged_claims():
    # The check judges the first MAX_CLAIMS claims: after pruning, nothing unjudged is left for
    # the next check to meet.
    sentences = [f"Claim number {n} is stated here [1]." for n in range(1, MAX_CLAIMS + 3)]
    code = "\n\n```bash\nbeta restart\n```\n\n"
    answer = " ".join(sentences[:3]) + code + " ".join(sentences[3:])
    judged = answer_claims(answer)
    assert len(judged) == MAX_CLAIMS
    pruned = prune(answer, [judged[1]])
    assert pruned == f"{sentences[0]} {sentences[2]}" + code + " ".join(sentences[3:MAX_CLAIMS])


def test_pruning_matches_a_missing_number_as_a_whole_token():
    answer = "It keeps 100 rows [1]. It waits 10 seconds [1]."
    assert prune(answer, [f"10{MISSING}"]) == "It keeps 100 rows [1]."


def test_an_answer_whose_direct_answer_is_flagged_prunes_to_nothing():
    answer = "Use the --turbo flag to do it [1]. Logs are kept for seven days [2]."
    assert prune(answer, ["Use the --turbo flag to do it."]) == ""
    assert prune(answer, [f"--turbo{MISSING}"]) == ""
    assert prune(answer, ["Logs are kept for seven days."]) == "Use the --turbo flag to do it [1]."


MANUAL_PAGE = [
    "-in filename: the input file. -out filename: the output file. -nokeys: no private keys "
    "are output. See /etc/ssl/openssl.cnf for the defaults."
]


@pytest.mark.parametrize(
    ("answer", "unsupported"),
    [
        # The files a command is given are the user's own, in a block or a command span.
        ("```sh\nopenssl pkcs12 -in certs.p12 -out certs.pem -nokeys\n```", ()),
        ("Run `openssl pkcs12 -in bundle.pfx -nokeys` [1].", ()),
        # Its options are still claims.
        ("```sh\nopenssl pkcs12 -in certs.p12 -nocerts\n```", ("-nocerts",)),
        # A file named alone, as what to edit, is a claim; so is a path.
        ("Edit `tls.cnf` to change it.", ("tls.cnf",)),
        (
            "```sh\nopenssl req -config /etc/pki/tls.cnf\n```",
            ("-config", "/etc/pki/tls.cnf"),
        ),
        # Slots to fill: "your...", path_to_...
        ("Pass `-in yourfile` and `-out path_to_output` [1].", ()),
        ("Use `CN=YourCommonName` in the subject.", ()),
    ],
)
def test_example_file_names_and_slots_in_commands_are_not_claims(answer, unsupported):
    assert lexical_support(answer, MANUAL_PAGE).unsupported == unsupported


def test_a_pruned_code_block_takes_the_sentences_that_announce_and_describe_it():
    answer = (
        "Use the `-nokeys` option [1]. Here is how:\n\n"
        "```sh\nopenssl pkcs12 -in a.p12 -nocerts\n```\n\n"
        "This command writes the certificates only. The keys stay in the file [1]."
    )
    assert prune(answer, [f"-nocerts{MISSING}"]) == (
        "Use the `-nokeys` option [1].\n\nThe keys stay in the file [1]."
    )


def test_an_answer_that_opens_by_announcing_a_pruned_command_prunes_to_nothing():
    answer = (
        "To import the file into a keystore, run the following command:\n\n"
        "```sh\nkeytool -importkeystore -srckeystore a.p12\n```\n\n"
        "This command imports the contents of your file into the keystore."
    )
    assert prune(answer, [f"-importkeystore{MISSING}"]) == ""


def test_an_answer_that_opens_with_a_command_keeps_it_when_only_its_description_is_doubted():
    answer = (
        "To start the server without the bundled docs, run:\n\n"
        "```bash\nuv run python manage.py serve --no-ingest\n```\n\n"
        "This command tells the server to skip loading the documentation. [1]"
    )
    doubted = "This command tells the server to skip loading the documentation."
    assert prune(answer, [doubted]) == (
        "To start the server without the bundled docs, run:\n\n"
        "```bash\nuv run python manage.py serve --no-ingest\n```"
    )
    # The command itself unsupported: that was the answer, and nothing is left.
    assert prune(answer, [f"--no-ingest{MISSING}"]) == ""


def test_supporting_picks_the_fewest_texts_that_hold_the_most_terms():
    from ragapp.graph.grounding import supporting

    texts = ["-req: read a request.", "-req and -cakey: sign with a CA key.", "-days n: validity."]
    assert supporting(["-req", "-cakey", "-days"], texts, limit=2) == [1, 2]
    assert supporting(["-req", "-cakey", "-days"], texts, limit=1) == [1]
    # Whole tokens only: -req is not in -request, and a text with no term is never picked.
    assert supporting(["-req"], ["-request: a request.", "nothing here"], limit=2) == []


def test_a_name_with_digits_from_the_question_must_still_be_in_the_documents():
    docs = ["-curves list: the supported curves, such as X25519 and P-256."]
    question = "How do I make s_client offer X25519MLKEM768?"
    answer = "Use `-curves X25519MLKEM768` [1]."
    assert lexical_support(answer, docs, question=question).unsupported == ("x25519mlkem768",)


@pytest.mark.parametrize(
    ("piece", "claim"),
    [
        ("The server listens on port `8000` [1].", "The server listens on port `8000`."),
        ("- **Set** `RAG_TOP_K` to change it [2]", "Set `RAG_TOP_K` to change it"),
        ("This is stated in [2].", ""),  # points at a source
        ("The document that provides this information is [3].", ""),  # and so does this
        ("The default is [1], [2] and [3].", ""),
        # A citation after a predicate that says something is a citation.
        ("The default iteration count is 2048 [3].", "The default iteration count is 2048."),
        ("It includes `-a` and `-b` [1].", "It includes `-a` and `-b`."),
        ("For example:", ""),
        ("It is 5.", ""),  # under four words
    ],
)
def test_a_piece_of_an_answer_states_a_claim_or_nothing(piece, claim):
    assert grounding.piece_claim(piece) == claim


def test_the_pieces_of_an_answer_leave_its_code_blocks_out():
    answer = "Run this [1]. Then restart.\n```bash\nrag serve --port 1\n```\nDone here now [2]."
    pieces = [p.strip() for p in grounding.answer_pieces(answer) if p.strip()]
    assert pieces == ["Run this [1].", "Then restart.", "Done here now [2]."]


def test_the_users_own_files_and_objects_may_be_named_back():
    """The documents state the command; the question gave the branch's name and the file's path."""
    docs = ["git push --delete removes a ref from the remote. git rm --cached keeps the file."]
    question = (
        "How do I delete the remote branch feature_login_v2, and untrack secrets/api_keys.txt?"
    )
    answer = (
        "Run `git push origin --delete feature_login_v2` [1]. "
        "`secrets/api_keys.txt` stays on disk after `git rm --cached` [1]."
    )
    assert lexical_support(answer, docs, question=question).unsupported == ()
    # Named without its kind or its path, the same name is a specific the documents lack.
    bare = "How do I delete feature_login_v2 and untrack api_keys.txt?"
    assert lexical_support(answer, docs, question=bare).unsupported == (
        "feature_login_v2",
        "api_keys.txt",
    )


def test_a_variable_an_example_assigns_a_call_to_is_its_own_name():
    docs = ["heapq.nlargest(n, iterable) returns the n largest elements. urlsplit(url) splits it."]
    answer = (
        "Use `heapq.nlargest` [1]:\n\n```python\nlargest_items = heapq.nlargest(3, data)\n"
        "scheme, net_loc, url_path = urlsplit(url)\n```"
    )
    assert lexical_support(answer, docs).unsupported == ()
    # A setting given a value, or a name in capitals, is a claim: no call defines it.
    config = "Set it [1]:\n\n```\nmax_wal_size = 1GB\nPG_OUTPUT = run(x)\n```"
    assert lexical_support(config, docs).unsupported == ("max_wal_size", "pg_output")


def test_a_file_an_examples_code_opens_is_its_own_and_the_users_strings_are_theirs():
    docs = ["subprocess.run(args, *, stdout=None, stderr=None): stderr=STDOUT joins the two."]
    question = "I call `subprocess.run(['pg_dump', 'mydb'], stdout=f)`. Where does stderr go?"
    answer = (
        "Pass `stderr=subprocess.STDOUT` [1]:\n\n```python\nwith open('dump.log', 'w') as f:\n"
        "    subprocess.run(['pg_dump', 'mydb'], stdout=f, stderr=subprocess.STDOUT)\n```\n\n"
        "Both streams of `pg_dump` then go to `dump.log`."
    )
    assert lexical_support(answer, docs, question=question).unsupported == ()
    # Asked without the user's code, the command is a specific the documents must hold; a path
    # the example opens is a claim too.
    bare = "Where does stderr of pg_dump go?"
    assert lexical_support(answer, docs, question=bare).unsupported == ("pg_dump",)
    path = answer.replace("'dump.log'", "'/var/log/dump.log'")
    assert "/var/log/dump.log" in lexical_support(path, docs, question=question).unsupported
    # A quoted module path or version is no file the example opens.
    module = "Call `import_module('os.path')` [1].\n\n```python\nimport_module('os.path')\n```"
    assert lexical_support(module, docs).unsupported == ("import_module", "os.path")


def test_a_reply_stopped_after_a_claim_past_the_judged_ones_keeps_what_the_whole_would_show():
    from ragapp.graph.grounding import MAX_CLAIMS, judged_part, written_past_judged

    sentences = [f"Step {n} sets the beta option number {n} [1]." for n in range(1, 10)]
    code = "```sh\nbeta serve --port 9000 --workers 4 --verbose\n```"
    reply = " ".join(sentences[:MAX_CLAIMS]) + "\n\n" + code + "\n\n" + " ".join(sentences[6:])
    # Read as a stream: the first prefix at which the writer may stop.
    stop = next(n for n in range(1, len(reply) + 1) if written_past_judged(reply[:n]))
    # Not inside the code block after the sixth claim, which the whole reply's cut keeps, and
    # not before the seventh claim is finished.
    assert reply[:stop].endswith(sentences[MAX_CLAIMS] + " S")
    assert judged_part(reply[:stop]) == judged_part(reply)
    assert code in judged_part(reply)
    # Six claims and an open code block are no reason to stop.
    assert not written_past_judged(
        " ".join(sentences[:MAX_CLAIMS]) + "\n\n```sh\nThis line has many words in it.\nAnd"
    )
