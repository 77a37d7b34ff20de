"""A deterministic check that an answer's specifics come from its documents (no model call).

Small local judges miss unsupported details and reject supported answers alike
(docs/evaluation.md). What a support answer gets wrong is usually a specific: a setting name, a
flag, a number, a path. This check lists the specifics of the answer that appear nowhere in the
documents, and measures how much of the answer's wording the documents cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragapp.graph.own_names import own_names

CITATION = re.compile(r"\[\d{1,2}\]")
# Specifics: `code`, /paths/to/files, --flags, SETTING_NAMES, numbers, dotted.names, snake_case.
SPECIFIC = re.compile(
    r"`[^`\n]+`|(?<![\w/])(?:/[\w.-]+){2,}|(?<![\w-])--?[a-z][\w-]*|\b[A-Z][A-Z0-9_]{2,}\b"
    r"|\b\d[\d.,:%]*\d\b|\b\d{2,}\b|\b\w+(?:\.\w+)+\b|\b\w*_\w+\b"
)
_FENCED = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.DOTALL)
# Inside code, a plain word is the language's syntax (SELECT, FROM), not a claim to check.
_PLAIN_WORD = re.compile(r"[A-Za-z]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_CALL = re.compile(r"\s*(?:await\s+|new\s+)?([A-Za-z_]\w*)\(")
# Names an answer makes up to illustrate, not to claim: `CREATE INDEX idx_example ON my_table`,
# /path/to/file.csv, <your-host>. Only the rest of such an example must come from the documents.
_GENERIC = (
    "name|names|id|ids|key|keys|value|values|path|file|filename|dir|directory|host|hostname|"
    "user|username|password|column|columns|table|tables|database|db|dbname|schema|string|text|"
    "number|data|item|items|field|fields|new|old|input|output|result|arg|param|var|tmp|temp|"
    "foo|bar|baz|sample|test|x|y|z"
)
_PLACEHOLDER = re.compile(
    # yourfile.p12, your-csr-file, CN=YourCommonName, path_to_certificate: slots to fill.
    r"example|path/to|\bpath_to_|\b(?:my|some)_|\byour(?=[a-z_-])|\b(?:foo|bar|baz)\b|^<.*>$"
    r"|\bmy(?:db|database|table|user|role|app|schema|index|host|server|file|column)s?\b"
    # A name made only of generic words is a slot to fill, in any field's examples:
    # table_name, column_name, dbname, file_name, key1, json_data, new_value.
    rf"|^(?:(?:{_GENERIC})_)*(?:{_GENERIC})\d*$",
    re.IGNORECASE,
)
# Names an example defines for itself (`def handler`, `CREATE TABLE orders`, `const client`):
# what the example then does with them is checked, the names themselves are its own.
_DEFINED = re.compile(
    r"\b(?:def|class|function|let|const|var|"
    r"create\s+(?:or\s+replace\s+)?(?:unique\s+)?(?:materialized\s+)?"
    r"(?:table|index|view|role|user|database|schema|function|sequence|trigger|type)"
    r"(?:\s+if\s+not\s+exists)?(?:\s+concurrently)?)\s+([A-Za-z_][\w]*)",
    re.IGNORECASE,
)
# A variable an example assigns the result of a call to (`largest = heapq.nlargest(3, data)`,
# `scheme, netloc, path = urlsplit(url)`, `conn := db.Open()`): the example's own name, in any
# language. Not a name in capitals (an environment variable, `PGPASSWORD=$(cat f)`), nor a
# setting given a value in a configuration file (`max_wal_size = 1GB`: no call), which are
# claims.
_ASSIGNED = re.compile(
    r"^[ \t]*((?:[A-Za-z_]\w*[ \t]*,[ \t]*)*[A-Za-z_]\w*)[ \t]*:?=(?!=)[^\n]*?\w\(",
    re.MULTILINE,
)
# A bare file name an example's code gives as a string (`open('output.log', 'w')`): the example's
# own file, as a file given to a command is (`_COMMAND_FILE`). A path is still a claim.
_QUOTED_FILE = re.compile(r"""['"]([A-Za-z_][\w-]*\.[A-Za-z]\w{0,4})['"]""")
# Specifics a question may carry into its answer without the documents repeating them: the
# version it asks about ("2.4"), a product's name in capitals. Not a plain number: "Is the limit
# 100?" answered "Yes, 100" must still find 100 in the documents. Code-like names (`SOME_SETTING`,
# --flags, dotted.names) are not among them: a made-up setting in a question must not become
# "supported" by being asked about. Nor is a name with digits in it (`X25519MLKEM768`, `qwen2`,
# `r6g`): it names an algorithm, a model or a machine type, which a question may ask about
# precisely because the documents do not have it.
_PLAIN_SPECIFIC = re.compile(r"\d+(?:\.\d+)+|[a-z]+", re.IGNORECASE)
_FILE_NAME = re.compile(
    r"\.(?:py|js|ts|json|ya?ml|toml|ini|cfg|conf|txt|md|rst|html?|csv|sql|sh|xml|log|env|lock|gz|"
    r"tar|zip|pem|key|crt|php|rb|go|rs|java|c|h)$"
)
# A bare file name given to a command (`openssl pkcs12 -in certs.p12 -out certs.pem`,
# `git apply fix.patch`) is the user's own file, named to illustrate: the command and its options
# are the claim. A path (/etc/ssl/openssl.cnf) or a file named in prose is still checked.
_COMMAND_FILE = re.compile(
    r"[\w-]+\.(?:pem|p12|pfx|crt|cer|csr|der|key|cnf|p7b|p7c|pk8|srl|jks|patch|diff|bundle|bak|"
    r"out|bin|dat|dump|gz|tgz|zip|tar|txt|log|csv|json|ya?ml|sql|html?|xml|conf)"
)
_SPACE = re.compile(r"\s+")
# A keyword argument or a setting given its value, in a code span: `text=True`, `when='midnight'`.
_ARGUMENT = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>'\w*'|\"\w*\"|\w+)")
# Latin abbreviations match the dotted-name pattern (`e.g`, `i.e`) but name nothing: an answer
# that writes "e.g." was refused for a specific "e.g" no document holds. Compared case-folded.
LATIN_ABBREVIATION = re.compile(r"(?:e\.g|i\.e|a\.k\.a|n\.b|w\.r\.t)\.?")
# Literal values any configuration or language writes; no document needs to spell them out.
_LITERALS = frozenset("true false on off null none yes no".split())
_STOP = frozenset(
    "the a an and or of to in on for is are be by with as at it its this that from your you "
    "can do does not no if then when which what how use used using than into so only also any "
    "each all more most one two per there their these those will would should may must has "
    "have had was were been being but about "
    # A verdict word is no claim the documents can back: "Yes" is grounded by what it affirms.
    "yes true false correct right".split()
)


@dataclass(frozen=True)
class Support:
    """How well the documents cover an answer."""

    coverage: float  # share of the answer's content words found in the documents, 0 to 1
    unsupported: tuple[str, ...]  # specifics of the answer found nowhere in the documents


def folded(text: str) -> str:
    """`text` as the check compares it: case-folded, every run of white space one space."""
    return _SPACE.sub(" ", text.casefold())


def contains_term(source: str, term: str) -> bool:
    """Whether `term` occurs in `source` as a whole token: 15 is not in 150, nor RAG_X in RAG_XY.

    A name may follow a dot (`readfile` is in `fs.readfile`: a method under its module); a
    number may not (15 is not in 1.15).
    """
    before = (
        r"(?<![\w-])"
        if term[0] == "-"
        else r"(?<![\w.])"
        if term[0].isdigit()
        else r"(?<!\w)"
        if term[0].isalnum()
        else ""
    )
    after = r"(?![\w])(?![.,]\d)" if term[-1].isalnum() else ""
    return re.search(before + re.escape(term) + after, source) is not None


def _words(text: str) -> list[str]:
    # A word keeps inner dots and dashes (RAG_TOP_K, v1.2, ef-search), not a sentence's full stop.
    return [w.rstrip("._-") for w in _WORD.findall(text)]


def _dotted_parts_found(source: str, term: str) -> bool:
    """A dotted API name written another way: every part is in the documents.

    `fs.promises.readfile` where the documents say `fsPromises.readFile` and "the promises API",
    or `models.charfield` where they say `CharField` in `django.db.models`. A file name
    (`settings.toml`) is not an API name: it must be found whole.
    """
    if "." not in term or _FILE_NAME.search(term) or term[0].isdigit():
        return False
    parts = [part for part in re.split(r"[.()]+", term) if part]
    return len(parts) > 1 and all(
        re.search(r"(?<![a-z0-9_])" + re.escape(part) + r"(?![a-z0-9_])", source) for part in parts
    )


def _defined_names(text: str) -> set[str]:
    """The names an answer's examples define for themselves, normalised."""
    names = {match.casefold() for match in _DEFINED.findall(text)}
    names.update(
        name.casefold()
        for name in _QUOTED_FILE.findall(text)
        # A file's extension, not a module's path ('os.path') or a version ('v1.2').
        if _FILE_NAME.search(name) or _COMMAND_FILE.fullmatch(name)
    )
    for targets in _ASSIGNED.findall(text):
        names.update(
            name.strip().casefold() for name in targets.split(",") if any(c.islower() for c in name)
        )
    return names


def _placeholder(part: str) -> bool:
    """Whether `part` is a made-up example name; a name in capitals is a real setting's form."""
    return bool(_PLACEHOLDER.search(folded(part.strip()))) and not part.strip("`").isupper()


def specifics(text: str) -> list[str]:
    """The specifics of `text`, normalised; a code span counts by the specifics inside it.

    A span such as `SELECT * FROM pg_stat_progress_create_index` rarely appears verbatim in
    the documents, while each of its names does; checking it whole refused correct answers.
    A span with no specific inside (`vacuum`) is checked whole.
    """
    found = []
    # A fenced block is code, like a span: its plain words (CREATE TABLE, git, commit) are
    # the language's syntax; its names, flags and numbers are claims.
    for block in _FENCED.findall(text):
        for part in SPECIFIC.findall(block):
            if part.startswith("`") or _PLAIN_WORD.fullmatch(part) or _COMMAND_FILE.fullmatch(part):
                continue
            term = folded(part.strip())
            if term and not _placeholder(part):
                found.append(term)
    for match in SPECIFIC.findall(_FENCED.sub(" ", text)):
        if match.startswith("`"):
            inner = match.strip("`").strip()
            parts = [p for p in SPECIFIC.findall(inner) if not _PLAIN_WORD.fullmatch(p)]
            if parts and len(inner.split()) > 1:
                # A command: the files it is given are the user's own (`_COMMAND_FILE`).
                parts = [p for p in parts if not _COMMAND_FILE.fullmatch(p)]
            elif not parts:
                # Plain words only. A call written with its arguments (`createIndex({ unique:
                # true })`) counts by the name it calls; anything else (`vacuum`) is checked whole.
                call = _CALL.match(inner)
                argument = _ARGUMENT.fullmatch(inner)
                if call and not _PLACEHOLDER.search(inner):
                    parts = [call.group(1)]
                elif argument and not _PLACEHOLDER.search(inner):
                    # `text=True`, `when='midnight'`: an argument and the value it is given,
                    # each a claim; a literal value (True, None) backs nothing and needs nothing
                    # (`_LITERALS`), and a one-letter one (`stderr=f`) is the example's variable.
                    value = argument.group("value").strip("'\"")
                    parts = [argument.group("name")] + ([value] if len(value) > 1 else [])
                elif len(inner.split()) >= 4:
                    continue  # words quoted as code, not a name: the prose check covers them
                else:
                    parts = [inner]
        else:
            parts = [match]
        for part in parts:
            term = folded(part.strip())
            if term and not _placeholder(part) and not LATIN_ABBREVIATION.fullmatch(term):
                found.append(term)
    return found


def lexical_support(answer: str, documents: list[str], *, question: str = "") -> Support:
    """The answer's word coverage by `documents`, and its specifics they do not contain.

    The question's own words count as covered (an answer restates what was asked), and so do
    its plain specifics (a version number, a product's name; see `_PLAIN_SPECIFIC`) and the
    names it gives as the user's own (`own_names`: `api_keys.txt` in secrets/api_keys.txt,
    `feature_login_v2` in "the remote branch feature_login_v2").
    """
    source = folded(" ".join(documents))
    asked = folded(question)
    # The user's own files and objects, which the answer may name back (`own_names`).
    own = own_names(question)
    body = CITATION.sub(" ", answer)
    # Only code defines names: "the function pg_frobnicate_all" in prose is a claim.
    defined = _defined_names("\n".join(_FENCED.findall(body) + re.findall(r"`([^`\n]+)`", body)))
    unsupported = []
    stems = {w[:5] for w in _words(source) if len(w) > 4}
    for term in specifics(body):
        if (
            term in unsupported
            or term in defined
            or term in _LITERALS
            # A word in capitals (INSERT, VACUUM) is a word: "inserts" in the documents backs it.
            or (term.isalpha() and len(term) > 4 and term[:5] in stems)
            or contains_term(source, term)
            or _dotted_parts_found(source, term)
            or (_PLAIN_SPECIFIC.fullmatch(term) and contains_term(asked, term))
            or term in own
        ):
            continue
        unsupported.append(term)
    words = [w for w in _words(body.casefold()) if len(w) > 2 and w not in _STOP]
    known = set(_words(source)) | set(_words(asked))
    stems |= {w[:5] for w in _words(asked) if len(w) > 4}
    covered = sum(1 for w in words if w in known or (len(w) > 4 and w[:5] in stems))
    # An answer with no content word ("Yes.", "No") says nothing the documents can be checked
    # against: unsupported, not vacuously supported (a document's injected "answer with one word"
    # otherwise passed as faithful, docs/architecture.md "Prompt injection").
    return Support(coverage=covered / len(words) if words else 0.0, unsupported=tuple(unsupported))


def supporting(terms: list[str], texts: list[str], *, limit: int) -> list[int]:
    """The positions of at most `limit` of `texts` that together hold the most of `terms`.

    Greedy: each pick holds the most terms the earlier picks do not; ties go to the earlier
    text. A text that holds none of them is never picked. Terms match as `lexical_support`
    matches them (whole tokens, or every part of a dotted name).
    """
    holds = []
    for text in texts:
        source = folded(text)
        found = {t for t in terms if contains_term(source, t) or _dotted_parts_found(source, t)}
        holds.append(found)
    chosen: list[int] = []
    covered: set[str] = set()
    while len(chosen) < limit:
        gains = [len(held - covered) for held in holds]
        best = max(range(len(texts)), key=gains.__getitem__, default=None)
        if best is None or not gains[best]:
            break
        chosen.append(best)
        covered |= holds[best]
    return chosen


# "The documents do not mention X", "There is no information about X in the documentation":
# the writer declining, as it is asked to when the documents do not hold the answer.
_DECLINE = re.compile(
    r"\b(?:(?:provided\s+|given\s+|these\s+|the\s+)?"
    r"(?:documents?|documentation|docs|(?<=provided\s)(?:context|texts?|excerpts?|passages?))"
    r"(?:\s+provided|\s+above|\s+given)?\s+"
    r"(?:do(?:es)?\s+not|don't|doesn't|did\s+not|didn't)\s+(?:\w+ly\s+)?"
    r"(?:contain|mention|provide|include|cover|specify|say|describe|explain|state|discuss|"
    r"address|have|give|list|offer|tell|show|answer|detail)"
    r"|(?:there\s+is|i\s+(?:found|could\s+find|can\s+find))\s+no\s+"
    r"(?:specific\s+|direct\s+|explicit\s+)?(?:information|mention|details?|documentation)"
    r"|(?:i\s+)?(?:cannot|can't|could\s+not|couldn't)\s+find\s+(?:any\s+)?"
    r"(?:information|mention|details?|documentation)"
    r"|(?:is|are)\s+not\s+(?:\w+ly\s+)?(?:covered|mentioned|documented|described|specified|"
    r"addressed|discussed|stated|listed|included|provided|given|found|explained)\s+in\s+the\s+"
    r"(?:provided\s+)?(?:documents?|documentation|docs))",
    re.IGNORECASE,
)
# A sentence whose predicate is only citations: "The command that does this is [2].", "The
# pricing plans are [1] [2]." The writer named where the answer is instead of saying it, so the
# sentence states nothing (stop 70: an unanswerable question and two wrong answers were shown so).
_CITED_AS_CONTENT = re.compile(
    r"\b(?:is|are|was|were|includes?)\s*(?:\[\d{1,2}\][\s,]*(?:and\s+)?)+[.!]?\s*$",
    re.IGNORECASE,
)
# ... whose subject is the source itself: "The document that provides this information is [3]."
# points at where the answer came from, after saying it, and withholds nothing.
_SOURCE_SUBJECT = re.compile(
    r"^\W*(?:the|this|these|that)\s+(?:\w+\s+)?(?:documents?|documentation|docs|sources?|"
    r"information|references?)\b",
    re.IGNORECASE,
)


_FIRST_SENTENCE = re.compile(r"^.*?(?:[.!?](?=\s|$)|\n\n|$)", re.DOTALL)
_CONTRAST = re.compile(r"\b(?:but|however|although|though|instead)\b", re.IGNORECASE)


def withholds_its_answer(answer: str) -> bool:
    """Whether a sentence of the answer gives citations in place of what it set out to say.

    "The command to generate the file is [2]." or "The extension to set is [1] [2]." says that
    the documents hold the answer, not the answer. Code in the answer would say what the prose
    did not, so an answer with a code block never counts; nor does a sentence that names the
    source as its subject ("The document that provides this information is [3].").
    """
    if "```" in answer:
        return False
    return any(
        _CITED_AS_CONTENT.search(piece.strip()) and not _SOURCE_SUBJECT.search(piece)
        for piece in answer_pieces(answer)
    )


def declines(answer: str) -> bool:
    """Whether the answer's opening says the documents do not hold the answer.

    Only the first sentence decides, and only when the answer cites nothing, shows no code and
    does not turn to an answer ("... does not say X. However, `Y` does" is one): a closing "the
    documents do not say whether Z" after an answer is a caveat, not a refusal. An empty reply
    declines too, and so does one that gives citations in place of its answer ("The command is
    [2].", `withholds_its_answer`): the writer did not find what to say.
    """
    text = answer.strip()
    if not text:
        return True  # nothing written is no answer either
    first = _FIRST_SENTENCE.match(text).group(0)
    second = _FIRST_SENTENCE.match(text[len(first) :].strip()).group(0)
    if "```" in text:
        return False  # code says something whatever the prose around it does
    if withholds_its_answer(text):
        return True
    return bool(
        _DECLINE.search(first)
        and not CITATION.search(text)  # an answer that cites a document answers from it
        and not _CONTRAST.search(first + " " + second)
    )


# Where a sentence ends inside a line: after . ! or ?, spaces, then what starts a sentence. Dots
# inside names (settings.py, v1.2) are not followed by a space and a capital.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"'])")
SENTENCE_END = re.compile(SENTENCE_BREAK.pattern + r"|\n+")
# A line that opens or closes a fenced code block.
FENCE_LINE = re.compile(r"^\s*(```|~~~)")
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#{1,6})\s+|\*\*|__")
# A sentence that only says where something is written: "This is stated in [2].", "For more
# details, see the documentation.", "The documentation for this parameter is located in [4]."
_POINTER = re.compile(
    r"^\W*(?:this|it|these|that|which|the\s+\w+(?:\s+for\s+[\w\s]+)?)\s+(?:is|are|can\s+be|was)\s+"
    r"(?:\w+ly\s+)?(?:stated|described|found|documented|mentioned|explained|shown|located|"
    r"listed|covered|detailed|given|referenced|specified|defined|written|noted|outlined)\s+in\b"
    r"|^\W*(?:see|refer\s+to|for\s+more\s+(?:details|information))\b"
    r"|^\W*(?:as\s+)?(?:stated|described|explained|shown|mentioned|specified)\s+in\s+"
    r"(?:\[\d+\]|the\s+doc)",
    re.IGNORECASE,
)
MAX_CLAIMS = 6  # each is a model call; an answer longer than this is checked on its first six


def claim_text(piece: str) -> str:
    """A sentence as a claim: no citations, no list or heading markup, spaces collapsed.

    `answer_claims` names claims in this form and `prune` finds them by it: one function, so
    the two cannot drift apart.
    """
    return " ".join(_MARKUP.sub("", re.sub(r"\s*\[\d{1,2}\]", "", piece)).strip().split())


def answer_pieces(answer: str) -> list[str]:
    """An answer cut at its sentence and line ends, its code blocks taken out, citations kept."""
    return SENTENCE_END.split(_FENCED.sub("\n", answer))


def piece_claim(piece: str) -> str:
    """The claim one piece of an answer states, or "" when it states nothing a judge could check.

    A heading, a bare "For example:" or a sentence of fewer than four words states nothing;
    "This is stated in [2]." and "The document that says so is [3]." point at a source and
    claim nothing themselves.
    """
    if _POINTER.search(piece) or _CITED_AS_CONTENT.search(piece.strip()):
        return ""
    sentence = claim_text(piece)
    return sentence if len(sentence.split()) >= 4 and not sentence.endswith(":") else ""


def answer_claims(answer: str) -> list[str]:
    """The sentences of an answer that state something, without code blocks and citations.

    Code is left to the lexical check of its specifics.
    """
    claims = [claim for piece in answer_pieces(answer) if (claim := piece_claim(piece))]
    return claims[:MAX_CLAIMS]


def judged_part(answer: str) -> str:
    """`answer` up to its last claim the check judges (`MAX_CLAIMS`): what may be shown.

    The claims check judges an answer's first six claims. A longer draft is cut after its sixth,
    so that no sentence is shown, or left for the check after pruning, that no check has seen.
    """
    stated = sum(1 for piece in answer_pieces(answer) if piece_claim(piece))
    return prune(answer, []) if stated > MAX_CLAIMS else answer


def written_past_judged(partial: str) -> bool:
    """Whether a reply still being written has finished a claim after the last the check judges.

    `judged_part` cuts a draft after its MAX_CLAIMS-th claim, and a code block or a line that
    states nothing after that claim stays until the next claim: so the writer may stop once a
    claim after the last judged one is finished. Only finished sentences count (the last piece
    may still grow), and an open code block is no sentence. Pieces once finished never change, so
    the cut `judged_part` then makes is the one it would make on the whole reply.
    """
    finished = answer_pieces(partial)[:-1]
    return sum(1 for piece in finished if piece_claim(piece)) > MAX_CLAIMS


# The sentence right after a code block that describes it: "This command imports the file."
_DESCRIBES_CODE = re.compile(
    r"^\s*(?:this|that|these|the\s+above)\s+(?:commands?|examples?|code|snippet|configuration|"
    r"script|query|statements?|lines?)\b[^\n]*?(?:[.!?](?=\s|$)|$)[ \t]*",
    re.IGNORECASE,
)
MISSING = " does not appear in the documents"  # how a specific no document holds is reported


def _blocks(answer: str) -> list[str]:
    """`answer` split into its prose and its fenced code blocks (odd indexes), in order."""
    return re.split(r"(```.*?(?:```|$))", answer, flags=re.DOTALL)


def _opens_with_code(blocks: list[str]) -> bool:
    return len(blocks) > 1 and not answer_claims(blocks[0])


def opening_claim(answer: str) -> str | None:
    """The claim of `answer` that `prune` cuts the whole answer for, or None.

    That is its first claim, unless the answer states nothing before its first code block: then
    the code is its opening, and a doubted sentence after it goes alone. The claims check stops
    at a doubted opening claim, since nothing the later verdicts say can leave an answer to show.
    """
    blocks = _blocks(answer)
    if _opens_with_code(blocks):
        return None
    claims = answer_claims(answer)
    return claims[0] if claims else None


def prune(answer: str, claims: list[str]) -> str:
    """`answer` without the sentences (and code blocks) that `claims` flags.

    A flagged claim is either a sentence of the answer, as `answer_claims` wrote it, or a
    specific reported as "<term> does not appear in the documents": every sentence or code
    block that holds that term goes. What is left was each judged stated by the documents.
    An answer whose opening is flagged prunes to nothing: its first claim, or its first code
    block when no sentence before that block states anything. What follows the claims the
    check judged (`MAX_CLAIMS`) goes too.
    """
    terms = [c.removesuffix(MISSING).casefold() for c in claims if c.endswith(MISSING)]
    sentences = {c for c in claims if not c.endswith(MISSING)}

    def flagged(text: str) -> bool:
        source = folded(text)
        return any(contains_term(source, term) for term in terms)

    blocks = _blocks(answer)
    # The writer is asked to start with the direct answer. When that is what the documents do
    # not state, cutting it leaves true sentences that answer nothing: no answer is left. An
    # answer that states nothing before its first code block ("Run the following command:")
    # opens with that code: a sentence after it that the judge doubts ("This command tells the
    # server to ...") is pruned alone, and the command stays.
    if _opens_with_code(blocks):
        if flagged(blocks[1]):
            return ""
    elif (opening := opening_claim(answer)) and (
        opening in sentences or any(contains_term(folded(opening), t) for t in terms)
    ):
        return ""
    # A code block that goes takes the sentence announcing it ("Run the following command:")
    # with it: left alone, that sentence points at nothing.
    announcing = {
        n - 1
        for n, block in enumerate(blocks)
        if n and block.startswith("```") and flagged(block) and _announces(blocks[n - 1])
    }
    # ... and the sentence after it that describes it ("This command ...") goes too.
    describing = {
        n + 1
        for n, block in enumerate(blocks)
        if block.startswith("```") and flagged(block) and n + 1 < len(blocks)
    }
    kept = []
    # Only the first MAX_CLAIMS claims are judged: what follows them goes (`judged_part`).
    judged = 0
    for n, block in enumerate(blocks):
        if judged > MAX_CLAIMS:
            break
        if block.startswith("```"):
            if not flagged(block):
                kept.append(block)
            continue
        if n in announcing:
            block = _without_last_sentence(block)
        if n in describing:
            block = _DESCRIBES_CODE.sub("", block, count=1)
        for line in block.split("\n"):
            pieces = SENTENCE_END.split(line)
            survivors = []
            for piece in pieces:
                judged += bool(piece_claim(piece))
                if judged > MAX_CLAIMS or claim_text(piece) in sentences or flagged(piece):
                    continue
                survivors.append(piece)
            if survivors and not claim_text(" ".join(survivors)):
                survivors = []  # only a list marker or a citation was left of the line
            if survivors or not line.strip():
                kept.append(" ".join(survivors) + "\n")
    text = "".join(kept)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _announces(text: str) -> bool:
    """Whether `text` ends with a sentence that announces what follows ("... as follows:")."""
    return text.rstrip().endswith(":")


def _without_last_sentence(text: str) -> str:
    """`text` without its last sentence (and whatever blank space trails it)."""
    body = text.rstrip()
    last = SENTENCE_END.split(body)[-1]  # split always returns at least one piece
    return body[: len(body) - len(last)].rstrip() + "\n"
