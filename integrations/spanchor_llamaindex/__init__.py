"""spanchor for LlamaIndex: span metrics and live recording (work in progress)."""

__all__: list[str] = []
