"""Check a golden set against the corpus it was written for, through the product's own loader.

Reads every page the way ingestion does (``ingestion.loaders.load_document``: for HTML, the text
without scripts, navigation and site chrome, with code in backticks) and checks each line of the
golden set with the harness's own rules (``ragapp.evaluation``):

* the file loads as a golden set (ids unique, answerable lines have sources, unanswerable ones
  have neither sources nor facts);
* every source of an answerable line is a page of the corpus (a path relative to its root);
* every fact of an answerable line is found, as ``fact_present`` finds it in an answer
  (case-insensitive, whitespace collapsed, numbers whole), in the loaded text of at least one
  of the line's sources;
* with ``--absent FILE``, every key term of an unanswerable line is found in no page at all.
  FILE is a JSON object mapping question ids to a key term or a list of them, e.g.
  ``{"git-005": ["git lfs"], "git-012": "git replay"}``; ids of unanswerable lines it does not
  name are reported as unchecked.

It prints a summary (answerable and unanswerable counts, distinct source pages) and every
problem, and exits with status 1 if there is any. It needs no database and no model:

    uv run python bench/corpora/check_golden.py /work/corpora/git-2.39 bench/golden/git239.jsonl
    uv run python bench/corpora/check_golden.py CORPUS GOLDEN --absent terms.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ingestion.loaders import LoadError, detect_format, load_document
from ragapp.evaluation.golden import GoldenFileError, load_golden
from ragapp.evaluation.metrics import fact_present

# The product's default RAG_MAX_FILE_BYTES (config/settings.py), without importing the settings.
DEFAULT_MAX_BYTES = 10 * 1024 * 1024


class Corpus:
    """The corpus's pages, loaded lazily (and once each) with the product's loader."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._texts: dict[str, str | None] = {}

    def text(self, relative: str) -> str | None:
        """The loaded text of one page (title first), or None if it is missing or unusable."""
        if relative not in self._texts:
            path = self.root / relative
            try:
                loaded = load_document(path, max_bytes=self.max_bytes)
                self._texts[relative] = f"{loaded.title}\n{loaded.text}"
            except (LoadError, OSError):
                self._texts[relative] = None
        return self._texts[relative]

    def pages(self) -> list[str]:
        """Every file ingestion would read: supported suffixes, no dotfiles or dot-directories."""
        return sorted(
            str(p.relative_to(self.root))
            for p in self.root.rglob("*")
            if p.is_file()
            and detect_format(p)
            and not any(part.startswith(".") for part in p.relative_to(self.root).parts)
        )


def check(corpus: Corpus, golden: Path, absent: dict[str, list[str]]) -> list[str]:
    problems: list[str] = []
    try:
        items = load_golden(golden)
    except GoldenFileError as exc:
        return [str(exc)]
    answerable = [item for item in items if item.answerable]
    unanswerable = [item for item in items if not item.answerable]
    for item in answerable:
        for source in item.sources:
            if not (corpus.root / source).is_file():
                problems.append(f"{item.id}: source {source!r} is not a page of the corpus")
            elif corpus.text(source) is None:
                problems.append(f"{item.id}: source {source!r} cannot be loaded")
        texts = [t for t in (corpus.text(s) for s in item.sources) if t]
        for fact in item.facts:
            if not any(fact_present(fact, text) for text in texts):
                problems.append(f"{item.id}: fact {fact!r} is in none of {list(item.sources)}")
    unchecked = []
    if absent:
        pages = [(page, corpus.text(page)) for page in corpus.pages()]
        for item in unanswerable:
            terms = absent.get(item.id)
            if not terms:
                unchecked.append(item.id)
                continue
            for term in terms:
                hits = [page for page, text in pages if text and fact_present(term, text)]
                if hits:
                    shown = ", ".join(hits[:5]) + (" ..." if len(hits) > 5 else "")
                    problems.append(
                        f"{item.id}: key term {term!r} is in {len(hits)} page(s): {shown}"
                    )
        for key in sorted(set(absent) - {item.id for item in unanswerable}):
            problems.append(f"--absent names {key!r}, which is not an unanswerable question")
    distinct = {source for item in answerable for source in item.sources}
    print(
        f"{golden}: {len(items)} questions, {len(answerable)} answerable over {len(distinct)} "
        f"distinct source pages, {len(unanswerable)} unanswerable"
    )
    if absent:
        print(f"key terms checked absent for {len(unanswerable) - len(unchecked)} unanswerable")
    if unchecked:
        print(f"no key term given for: {', '.join(unchecked)}")
    return problems


def _absent_terms(path: Path | None) -> dict[str, list[str]]:
    if path is None:
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a JSON object of question id -> term(s)")
    return {key: [value] if isinstance(value, str) else list(value) for key, value in data.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="the corpus's root directory")
    parser.add_argument("golden", type=Path, help="the golden set (.jsonl)")
    parser.add_argument("--absent", type=Path, help="JSON: unanswerable id -> key term(s)")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES)
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        parser.error(f"{args.corpus} is not a directory")
    problems = check(Corpus(args.corpus, args.max_bytes), args.golden, _absent_terms(args.absent))
    for problem in problems:
        print("FAIL", problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
