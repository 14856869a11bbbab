"""A folder of Markdown help articles, searched with BM25; re-read only where files changed."""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import bm25s

from baton_kafka.agents.articles.tokens import tokens

_HEADING = re.compile(r"^\s*#\s+(.+?)\s*#*\s*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# The share of the best article's score another must reach to be shown with it.
RELATIVE_FLOOR = 0.5


class ArticlesError(ValueError):
    """The articles folder cannot be read."""


@dataclass(frozen=True)
class Article:
    """One help article: its file name, title (its first ``#`` heading) and text."""

    name: str
    title: str
    text: str
    digest: str


def parse(name: str, raw: bytes) -> Article:
    """The article in ``raw`` (Markdown); titled by its first heading, else its file name."""
    text = _COMMENT.sub("", raw.decode("utf-8", "replace")).strip()
    heading = _HEADING.search(text)
    title = heading.group(1) if heading else Path(name).stem.replace("-", " ").replace("_", " ")
    body = (text[: heading.start()] + text[heading.end() :]).strip() if heading else text
    return Article(name, title, body, hashlib.sha256(raw).hexdigest())


class ArticleIndex:
    """The articles of one folder (``*.md``, recursively), searchable by the words of a ticket."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._stat: dict[str, tuple[int, int]] = {}
        self._articles: dict[str, Article] = {}
        self._order: list[str] = []
        self._bm25: bm25s.BM25 | None = None
        self._lock = threading.Lock()

    @property
    def articles(self) -> list[Article]:
        """Every article, by file name."""
        return [self._articles[n] for n in self._order]

    @property
    def version(self) -> str:
        """A hash of every article's name and contents (``a-…``): which articles answered."""
        joined = "\0".join(f"{n}\0{self._articles[n].digest}" for n in self._order)
        return "a-" + hashlib.sha256(joined.encode()).hexdigest()[:10]

    def refresh(self) -> list[str]:
        """Re-read the files added or changed since the last refresh (by size and mtime), drop
        the removed ones; the names re-read."""
        if not self.folder.is_dir():
            raise ArticlesError(f"{self.folder}: the articles folder is not a directory")
        with self._lock:
            seen: dict[str, tuple[int, int]] = {}
            read: list[str] = []
            for path in sorted(self.folder.rglob("*.md")):
                name = path.relative_to(self.folder).as_posix()
                try:
                    st = path.stat()
                    seen[name] = (st.st_size, st.st_mtime_ns)
                    if self._stat.get(name) != seen[name]:
                        self._articles[name] = parse(name, path.read_bytes())
                        read.append(name)
                except OSError as exc:
                    raise ArticlesError(f"{path}: cannot read ({exc.strerror})") from None
            for gone in set(self._stat) - set(seen):
                self._articles.pop(gone, None)
            changed = bool(read) or set(seen) != set(self._stat)
            self._stat = seen
            self._order = sorted(seen)
            if changed or self._bm25 is None:
                self._bm25 = self._build()
            return read

    def _build(self) -> bm25s.BM25 | None:
        corpus = [tokens(f"{a.title}\n{a.title}\n{a.text}") for a in self.articles]
        if not any(corpus):
            return None
        model = bm25s.BM25()
        model.index(corpus, show_progress=False)
        return model

    def search(self, text: str, k: int) -> list[Article]:
        """The at most ``k`` articles that fit ``text`` best, best first (none that share no
        term with it, none far below the best)."""
        query = tokens(text)
        with self._lock:
            model, articles = self._bm25, self.articles
        if model is None or not query or k <= 0:
            return []
        found, scores = model.retrieve([query], k=min(k, len(articles)), show_progress=False)
        # A weak match shares only common words with the ticket ("die", "the"): an article is
        # shown when it scores at least a share of the best one, so no stop-word list is needed.
        floor = max(float(scores[0][0]) * RELATIVE_FLOOR, 1e-9)
        return [articles[int(i)] for i, s in zip(found[0], scores[0], strict=True) if s >= floor]


_INDEXES: dict[Path, ArticleIndex] = {}
_INDEXES_LOCK = threading.Lock()


def index_for(folder: Path | str) -> ArticleIndex:
    """The index of ``folder``, refreshed: one per folder in a process, re-read incrementally."""
    key = Path(folder).resolve()
    with _INDEXES_LOCK:
        index = _INDEXES.setdefault(key, ArticleIndex(key))
    index.refresh()
    return index


def search(folder: Path | str, text: str, k: int) -> list[Article]:
    """The at most ``k`` articles of ``folder`` that fit ``text`` (indexed on first use)."""
    key = Path(folder).resolve()
    index = _INDEXES.get(key) or index_for(key)
    return index.search(text, k)
