"""The names a question gives as the user's own: where their files are, what they made.

A support question names things of the user's: a file by its path ("my worker at
/srv/app/jobs/resize.js"), an object by its kind ("my table user_events", "the remote branch
feature_login_v2"), as theirs ("my logger `app.worker`") or in an SQL statement ("FROM
page_views"). No documentation has reason to name them, so two checks must not hold their
absence against the question:

- the unknown-names lookup (`ragapp/retrieval/coverage.py`) does not refuse the question for
  them;
- the answer check (`grounding.lexical_support`) lets the answer repeat them ("git push origin
  --delete feature_login_v2"): the documents state the command, the user gave the name.

A product's own kinds (setting, option, command, extension, function, module) are not kinds of
the user's objects, so "the extension pg_cron" stays a name the documentation must have.
"""

from __future__ import annotations

import re

# A path's separators: a name in a path is the user's own file or folder.
PATH_SEPARATORS = frozenset("/\\")
# The product's own kinds: what follows them is the documentation's to name.
_PRODUCT_KINDS = (
    "setting|option|parameter|flag|command|extension|function|method|module|package|library"
    "|plugin|variable|config|configuration"
)
# What introduces the user's own object by its kind, or an SQL statement's table: the things
# users create and name, and SQL keywords in capitals ("from" in prose is no SQL).
_KIND = (
    r"(?:\b(?:tables?|columns?|ind(?:ex|exes|ices)|roles?|users?|databases?|schemas?|replicas?"
    r"|hosts?|servers?|branch(?:es)?|remotes?|tags?|repo(?:sitory|sitories|s)?|folders?"
    r"|director(?:y|ies)|buckets?|models?|fields?|apps?|projects?|queues?|topics?|services?"
    r"|containers?|pods?|namespaces?|instances?|accounts?|tenants?|customers?|jobs?|tasks?"
    r"|sites?|domains?)"
    r"(?:\s+(?:called|named))?"
    # Whatever the user calls theirs: "my logger `app.worker`", "our dataclass Order". Not
    # the product's own kinds, which a user has too ("my setting wal_keep_segments").
    rf"|\b(?:my|our)\s+(?!(?:{_PRODUCT_KINDS})s?\b)[a-z]+"
    r"|(?-i:\b(?:FROM|JOIN|INTO|UPDATE|TABLE)))\s+[`'\"]?"
)
_KINDS = re.compile(_KIND, re.IGNORECASE)
# A path in plain text or in a code span: parts joined by slashes or backslashes.
_PATH = re.compile(r"[\w.~:$-]*(?:[/\\]+[\w.~$-]+)+[/\\]?")
# A code span of the question, and a string in it.
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
# A name that may follow a kind: a word with a letter, maybe dotted, dashed or underscored.
_NAME_AFTER = re.compile(r"[A-Za-z_][\w.-]*\w")


def own_object_starts(question: str) -> frozenset[int]:
    """Where in `question` a name follows the kind of the user's object or an SQL keyword.

    One pass over the question: the lookup asks it of every name, and a pasted question may
    hold hundreds.
    """
    return frozenset(kind.end() for kind in _KINDS.finditer(question))


def own_names(question: str) -> frozenset[str]:
    """The question's names of the user's own, case-folded: paths, their parts, named objects.

    `./data/config.json` gives itself, its tails (`/data/config.json`, `data/config.json`,
    `config.json`, ...) and its parts; "the remote branch feature_login_v2" gives
    `feature_login_v2`; `` `subprocess.run(['pg_dump', 'mydb'])` `` gives the strings of the
    user's code, `pg_dump` and `mydb`. A name in that code outside a string (a function, an
    argument) is not the user's: a made-up API asked about stays a specific to check.
    """
    names: set[str] = set()
    for path in _PATH.findall(question):
        path = path.rstrip(".,:;").casefold()  # a sentence's full stop is not the file's
        # Every tail from a separator on, with and without it: an answer writes
        # ./data/config.json as /data/config.json or data/config.json too.
        for cut in [0] + [i for i, c in enumerate(path) if c in PATH_SEPARATORS]:
            names.update({path[cut:], path[cut:].lstrip("/\\")})
        names.update(part for part in re.split(r"[/\\]+", path) if part)
    for start in own_object_starts(question):
        match = _NAME_AFTER.match(question, start)
        if match:
            names.add(match.group().casefold())
    # The strings of the user's code are their data: `subprocess.run(['pg_dump', 'mydb'])`.
    for span in _CODE_SPAN.findall(question):
        for string in _STRING.findall(span):
            text = string[1:-1].casefold()
            names.update({text, *text.split()} - {""})
    return frozenset(names)
