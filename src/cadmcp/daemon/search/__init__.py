"""The daemon's search over the merged host catalogs (`search_dynamic`).

Public API: `SearchIndex` (per-host `replace_host` / `remove_host`, `search`), `CapabilityDoc`,
`SearchResult`, `capability_docs` (MCP list results → docs), `build_index_from_catalog`
(evaluation `catalog.json` → index), `KEYWORDS_META_KEY` (the `_meta` key toolset authors
use to add search words), and what hosts declare for ranking: `HostDomain` / `meta_domain`
(`DOMAIN_META_KEY`, on the `tools/list` result) and `FALLBACK_META_KEY` (on a tool). See
docs/search.md.
"""

from cadmcp.daemon.search.capability import KINDS, CapabilityDoc, SearchResult
from cadmcp.daemon.search.catalog import (
    KEYWORDS_META_KEY,
    build_index_from_catalog,
    capability_docs,
    default_key,
)
from cadmcp.daemon.search.domain import DOMAIN_META_KEY, FALLBACK_META_KEY, HostDomain, meta_domain
from cadmcp.daemon.search.index import SearchIndex

__all__ = [
    "DOMAIN_META_KEY",
    "FALLBACK_META_KEY",
    "KEYWORDS_META_KEY",
    "KINDS",
    "CapabilityDoc",
    "HostDomain",
    "SearchIndex",
    "SearchResult",
    "build_index_from_catalog",
    "capability_docs",
    "default_key",
    "meta_domain",
]
