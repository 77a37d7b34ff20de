"""Names a question asks about that the knowledge base never mentions.

A support engineer often asks about something the documentation does not have: a setting or a
command of a newer release (`pg_combinebackup`, `transaction_timeout`), an algorithm or a
product it does not cover (`X25519MLKEM768`, AWS KMS), an option that does not exist
(`-grade`). The passages retrieved for such a question are about something else that is near
it, and a small model writes an answer from them anyway, often one that reuses the question's
name for something the documents do say. When no chunk of the knowledge base holds the name,
the honest answer is that the documentation does not mention it.

Only names shaped like technical names count, because a question's plain words are the user's
own ("our mail server", "an employee left"):

- a code span (`name`), a flag (-x, --name), a snake_case or dotted name (pg_cron,
  db.r6g.large);
- an acronym of three or more capitals (QUIC, KMS, UUID);
- a name with letters and digits (Argon2, X25519MLKEM768, DNS-01);
- a name with inner capitals (pgAdmin, PowerShell, SSLCertificateFile, CApath), of four letters
  or more;
- a capitalised word inside a sentence that is no common word (Kubernetes, Patroni, Barman): a
  product's name. "Common" is read off the vocabulary of the packaged embedder's tokenizer
  (about 22,500 lowercased whole words of English text), so a capitalised ordinary word
  (Windows, Java, Azure, Backups) is not a name; nor is any word of a question in title case.

Code is read as code. A code span written as an expression (`fs.promises.readFile()`,
`crypto.createHash("sha256")`, `on_delete=models.CASCADE`) names the identifiers in it, not its
arguments and strings: the call's arguments are the user's, and the documentation writes the
signature (`fsPromises.readFile(path[, options])`), not the call. A name written as a call keeps
"()" (`fs.mkdirSync()`). An API's documentation names a method under its own object, while a
user writes the object as they hold it (`fs.promises.readFile` for `fsPromises.readFile`,
`response.set_cookie` for `HttpResponse.set_cookie`), so a dotted name counts as mentioned when
the knowledge base holds its last two parts, the first of them maybe the end of a longer word;
and a call (`server.listen()`, `myServer.listen()`) when it holds the method as some object's
member (`.listen`). A method that no object has (`fs.glob()`, `util.styleText()`) and a part
that is new (`import.meta.dirname`, `gc.maxCruftSize`) are still never mentioned.

A path is where the user keeps their files: a code span with a slash (`./data/config.json`,
`/etc/ssl/openssl.cnf`, `node:fs/promises`) names nothing, nor does the name that ends a path in
plain text (the `resize.js` of /srv/app/jobs/resize.js); a file named alone (`tsconfig.json`) is
still a name. Nor does a name that follows the kind of thing users make ("my table user_events",
"the role report_reader", "the branch feature_x") or an SQL keyword (`FROM page_views`) count:
the object is the user's own, which no documentation has reason to name.

Not counted: quantities (32-byte, 10MB), a file's extension (.p7b), two-letter acronyms (CI),
version tags (v2), hyphenated words (front-end, append-only), units (MiB) and plain numbers. A
name asked without the dashes an option has is that option (CApath is -CApath). Over the whole
tuning sets these shapes name a missing thing in 44 of 72 unanswerable questions and in none of
228 answerable ones; over the whole held-out sets, in 28 of 45 and 2 of 182 (docs/evaluation.md,
"Names in inner capitals" and "Product names the vocabulary does not know"). The risk is a
user's own name that looks technical and is not introduced by its kind: a host name with a
digit (web01), a domain (mail.example.com), a product the documentation has no reason to name,
a person's or a company's name the vocabulary lacks (Priya, Contoso), a capitalised misspelling
(Postgress).
"""

from __future__ import annotations

import json
import logging
import re
from functools import cache

from django.db import connection

from ragapp.graph.grounding import LATIN_ABBREVIATION
from ragapp.graph.own_names import PATH_SEPARATORS, own_object_starts
from ragapp.models import Chunk
from ragapp.providers.local_embeddings import (
    TOKENIZER_FILE,
    TOKENIZER_PACKAGE,
    TOKENIZER_SHA256,
    TOKENIZER_SIZE,
)
from ragapp.providers.model_files import ModelFileError, packaged_file, verify_file

logger = logging.getLogger(__name__)

_SHAPES = re.compile(
    r"`(?P<span>[^`\s]+)`"
    # A call written with spaces in its arguments (`subprocess.run(['pg_dump', 'mydb'], stdout=f)`):
    # an expression, read as one. A command with spaces (`git log --oneline`) has no parenthesis
    # and is read word by word.
    r"|`(?P<call>[^`\n]*[\w\]]\([^`\n]*)`"
    r"|(?<![\w-])(?P<flag>--?[a-z][\w-]*[a-z0-9])"
    r"|(?P<word>\b[A-Za-z][\w.-]*[A-Za-z0-9]\b)"
)
# A code span with one of these marks is an expression, not a name: a call with its arguments,
# an assignment, a string.
_EXPRESSION_MARKS = frozenset("()='\"")
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
# A call's parentheses and its arguments, innermost first.
_ARGUMENTS = re.compile(r"\([^()]*\)")
_CHAIN = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?")
# How a name written as a call ends (`fs.mkdirSync()`): the lookup reads it as a method.
CALL = "()"
# A word of these shapes is a name: capitals, letters with digits, snake_case, dotted.
_ACRONYM = re.compile(r"[A-Z][A-Z0-9]{2,}")
_SNAKE = re.compile(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+")
_DOTTED = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z0-9_][\w-]*)+")
_WITH_DIGITS = re.compile(r"(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z][\w-]*")
# An inner capital after a small letter (pgAdmin, PowerShell) or a run of capitals then small
# letters (SSLCertificateFile, CApath): a product's or a setting's own spelling. Four letters at
# least, so that units (KiB, MiB) are not names.
_CAMEL = re.compile(r"[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*")
_CAMEL_MIN = 4
# A capitalised word, letters only: a product's name when it is inside a sentence and is no
# common word (Kubernetes, Patroni). At the start of a sentence any word is capitalised.
_CAPITALISED = re.compile(r"[A-Z][a-z]{3,}")
_SENTENCE_END = (".", "?", "!", ":", ";")
# What may stand between a sentence's end and its first word: space, quotes, a parenthesis.
_OPENERS = " \t\r\n\"'(\u201c\u2018"
_VERSION_TAG = re.compile(r"v\d+(?:[.-]\w+)*", re.IGNORECASE)
# Two or more capitalised words in a row, each maybe possessive: a product's name made of common
# words (Azure Key Vault, App Service, Let's Encrypt) that no single word shows.
_CAPITALISED_RUN = re.compile(
    r"(?<![\w.-])[A-Z][a-z]+(?:['\u2019]s)?(?:[ -][A-Z][a-z]+(?:['\u2019]s)?)+(?![\w-])"
)
_POSSESSIVE = re.compile(r"['\u2019]s$")
# Small words that a title capitalises but prose does not, inside a sentence.
_PHRASE_BREAKS = frozenset(
    "a an and are at be but by can could do does for from how in into is it its may might my "
    "no not of on or our out over should so than that the their these they this those to up "
    "was we what when where which who why will with would you your".split()
)
# A question written in capitals is shouted, not full of acronyms.
_MOSTLY_CAPITALS = 0.6
# The most names one question is checked for (each may scan the chunks).
MAX_NAMES = 8
# How a chunk's grade starts when it was not judged for this reason (the trace lines say why).
UNKNOWN_NAMES_REASON = "not asked: the question names"


def technical_names(question: str) -> list[str]:
    """The names in `question` shaped like technical ones, in order, without repeats."""
    letters = [c for c in question if c.isalpha()]
    shouted = letters and sum(c.isupper() for c in letters) / len(letters) > _MOSTLY_CAPITALS
    titled = _title_case(question)
    owned = own_object_starts(question)
    names: list[str] = []
    for match in _SHAPES.finditer(question):
        span, word, call = match.group("span"), match.group("word"), match.group("call")
        if span and not PATH_SEPARATORS.isdisjoint(span):
            continue  # a path, a URL or a module's path: where the user's files are
        # A name in a code span starts after its backtick ("the table `orders`").
        if not match.group("flag") and match.start(match.lastgroup) in owned:
            continue  # "my table user_events", "FROM page_views": the user's own object
        if call or (span and not _EXPRESSION_MARKS.isdisjoint(span)):
            found = _expression_names(call or span)
        elif word:
            if not _is_name(word, question, match.start(), shouted, titled):
                continue
            word = _english_tail_dropped(word, question, match.start(), shouted, titled)
            # Written as a call in plain text: "why does res.setHeader() throw?"
            found = [word + CALL if question.startswith("(", match.end()) else word]
        else:
            found = [span or match.group("flag")]
        names += [n for n in found if n.casefold() not in {m.casefold() for m in names}]
    if not shouted:  # a phrase has spaces: no shape above gives it
        names += _capitalised_phrases(question)
    return names[:MAX_NAMES]


def _capitalised_phrases(question: str) -> list[str]:
    """The names of two or more capitalised words inside a sentence (Azure Key Vault).

    Each word is common, so no word alone is a name, but the knowledge base that never writes
    them together does not cover the product. A sentence's first word is left out. A question
    that capitalises a small word inside a sentence ("Store Keys In Azure") or its other common
    words is a title, where any run may be plain words.
    """
    phrases: list[str] = []
    for match in _CAPITALISED_RUN.finditer(question):
        words = re.split(r"[ -]", match.group())
        if _starts_sentence(question, match.start()):
            words = words[1:]
        if any(_POSSESSIVE.sub("", word).casefold() in _PHRASE_BREAKS for word in words):
            return []
        if len(words) >= 2 and " ".join(words) not in phrases:
            phrases.append(" ".join(words))
    rest = question
    for phrase in phrases:
        rest = rest.replace(phrase, " ")
    return [] if _title_case(rest) else phrases


def _expression_names(code: str) -> list[str]:
    """The names in a code span written as an expression, its strings and arguments left out.

    `require('fs').promises.writeFile()` names `require()` and `promises.writeFile()`; a bare
    plain word inside (`true` in `setKeepAlive(true)`, `a` in `Q(a=1)`) is no name.
    """
    code = _STRING.sub(" ", code)
    while _ARGUMENTS.search(code):  # each pass takes out the innermost pairs: it ends
        code = _ARGUMENTS.sub("\0 ", code)
    code = code.replace("\0", CALL)
    names = []
    for chain in _CHAIN.findall(code):
        # A word alone counts by the name shapes, read with no sentence around it: titled, so
        # that a capitalised literal (`True`) is not taken for a product's name.
        shaped = "." in chain or chain.endswith(CALL) or _is_name(chain, chain, 0, False, True)
        if shaped and chain not in names:
            names.append(chain)
    return names


def _is_name(word: str, question: str, start: int, shouted: bool, titled: bool) -> bool:
    # `word` starts with a letter and ends with a letter or digit (`_SHAPES`).
    if start and question[start - 1] == ".":
        return False  # a file's extension (.p7b): the user's own file type
    if start and question[start - 1] in PATH_SEPARATORS:
        return False  # the end of a path (./data/config.json, /srv/jobs/resize.js): the user's
    if _VERSION_TAG.fullmatch(word) or LATIN_ABBREVIATION.fullmatch(word.casefold()):
        return False  # v2, or "e.g.": no knowledge base needs to mention either
    return bool(
        (_ACRONYM.fullmatch(word) and not shouted)
        or _SNAKE.fullmatch(word)
        or _DOTTED.fullmatch(word)
        or _WITH_DIGITS.fullmatch(word)
        or (_CAMEL.fullmatch(word) and len(word) >= _CAMEL_MIN)
        or (not titled and _is_product_name(word, question, start))
    )


def _english_tail_dropped(word: str, question: str, start: int, shouted: bool, titled: bool) -> str:
    """`base64-encode` names `base64`, `ipv6-only` names `ipv6`: in a compound, the plain
    lowercase words after the name are English, and the documents write them otherwise
    ("base64 encoding", "Base64-encoded"). The head must still be a name by itself.
    """
    parts = word.split("-")
    while len(parts) > 1 and parts[-1].isalpha() and parts[-1].islower():
        parts.pop()
    head = "-".join(parts)
    return head if head == word or _is_name(head, question, start, shouted, titled) else word


def _is_product_name(word: str, question: str, start: int) -> bool:
    """Whether `word` is capitalised inside a sentence and is no common word (Kubernetes)."""
    if not _CAPITALISED.fullmatch(word) or _known(word):
        return False
    return not _starts_sentence(question, start)


def _starts_sentence(question: str, start: int) -> bool:
    """Whether the word at `start` is a sentence's first, where any word is capitalised."""
    before = question[:start]
    sentence = before.rstrip(_OPENERS)
    # A line break starts a sentence too: a pasted question's lines often have no full stop.
    return not sentence or sentence.endswith(_SENTENCE_END) or "\n" in before[len(sentence) :]


def _known(word: str) -> bool:
    """Whether `word`, or its singular (Backups, Queries), is a common word of the vocabulary.

    Every word is known when the vocabulary cannot be read: then no word is a product name.
    """
    vocabulary = common_words()
    if vocabulary is None:
        return True
    word = word.casefold()
    forms = {word, word.removesuffix("s"), word.removesuffix("es")}
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    return not forms.isdisjoint(vocabulary)


def _title_case(question: str) -> bool:
    """Whether the question capitalises its common words ("How Do I Set Up Nginx For This?").

    Only common words after the first are counted, at least two of them: the names looked for are
    capitalised too, and must not make a question with few other words look like a title.
    """
    words = [
        w for w in re.findall(r"[A-Za-z]{3,}", question.strip().partition(" ")[2]) if _known(w)
    ]
    return len(words) >= 2 and sum(w[0].isupper() for w in words) * 2 > len(words)


@cache
def common_words() -> frozenset[str] | None:
    """The whole words of the packaged embedder's vocabulary (bert-base-uncased's, lowercased).

    About 22,500 words of English text, common people's and places' names among them; pieces
    that continue a word ("##ing") and marks are left out. A capitalised word outside it is a
    name that text rarely used. The file is installed with the embedder's package and checked
    against its pinned digest. When it cannot be read (None), this shape is left out, with a
    warning logged once, and the other shapes still count: a run must not fail because its
    question happens to hold a capitalised word.
    """
    try:
        path = verify_file(
            packaged_file(TOKENIZER_PACKAGE, TOKENIZER_FILE),
            size=TOKENIZER_SIZE,
            sha256=TOKENIZER_SHA256,
        )
        vocabulary = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    except (ModelFileError, OSError, ValueError, KeyError) as error:
        logger.warning("Product names are not looked up: %s", error)
        return None
    return frozenset(token for token in vocabulary if token.isalpha())


def _pattern(name: str) -> str:
    """A POSIX regular expression for `name` as the knowledge base may write it, case aside.

    A whole token: a dash in a name may be written without it (SHA-256, SHA256; DNS-01, DNS01),
    and a name asked without its dashes is the option that has them (CApath is -CApath). A
    dotted name also matches its last two parts, the first maybe the end of a longer word
    (fs.promises.readFile: fsPromises.readFile); a call, its method as a member (.listen).
    """
    if " " in name:  # a name of words: across a line break or a dash, possessive or not
        words = (re.escape(_POSSESSIVE.sub("", word)) + "(['\u2019]s)?" for word in name.split())
        return "(^|[^[:alnum:]_])" + "[[:space:]-]+".join(words) + "($|[^[:alnum:]_])"
    called = name.endswith(CALL)
    name = name.removesuffix(CALL)
    body = "-?".join(re.escape(part) for part in name.split("-") if part)
    if name.startswith("-"):
        body = "-" * (len(name) - len(name.lstrip("-"))) + body
    else:
        body = "-{0,2}" + body
    end = "($|[^[:alnum:]_])"
    alternatives = [f"(^|[^[:alnum:]_-]){body}{end}"]
    parts = name.split(".")
    if len(parts) >= 2 and all(parts):
        alternatives.append(re.escape(".".join(parts[-2:])) + end)
    if called and len(parts) >= 2 and parts[-1]:
        alternatives.append(re.escape("." + parts[-1]) + end)
    return "|".join(f"({alternative})" for alternative in alternatives)


def _lookup_pattern(name: str) -> str:
    """`_pattern(name)`, found in capitals only when the name is a common word in capitals.

    A setting or constant written in capitals (STORAGES, DATABASES) is that name only in
    capitals: in lowercase it is the English word ("other file storages"), which a knowledge
    base that never had the setting still writes. An acronym no vocabulary knows (CSV, QUIC)
    may be written in lowercase in code (`--format csv`), so its case still does not matter.
    Without the vocabulary no word is known to be common, and every name is found in any case.
    """
    pattern = _pattern(name)
    if name.isupper() and name.isalpha() and common_words() is not None and _known(name):
        return "(?c)" + pattern  # PostgreSQL's embedded option: case-sensitive despite `~*`
    return pattern


def never_mentioned(names: list[str]) -> list[str]:
    """Those of `names` that no chunk of the knowledge base holds, in its text or headings.

    One statement; each name that is present stops at its first chunk, and one that is absent
    reads every chunk's text once (about 30 ms for 5,000 chunks).
    """
    if not names:
        return []
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT n.name FROM unnest(%s::text[], %s::text[]) AS n(name, pattern)
            WHERE NOT EXISTS (
                SELECT 1 FROM {table} c
                WHERE c.text ~* n.pattern OR c.heading_path ~* n.pattern
            )
            """,
            [names, [_lookup_pattern(name) for name in names]],
        )
        absent = {row[0] for row in cursor.fetchall()}
    return [name for name in names if name in absent]
