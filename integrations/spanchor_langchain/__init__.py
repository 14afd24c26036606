"""spanchor for LangChain: record retrievals into spanchor run files (work in progress)."""

__all__: list[str] = []
