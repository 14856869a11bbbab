"""The shop's help articles: a Markdown folder beside the policy, indexed for search."""

from baton_kafka.agents.articles.index import (
    Article,
    ArticleIndex,
    ArticlesError,
    index_for,
    parse,
    search,
)
from baton_kafka.agents.articles.tokens import tokens

__all__ = ["Article", "ArticleIndex", "ArticlesError", "index_for", "parse", "search", "tokens"]
