"""dashrag inside other frameworks: LangChain and LlamaIndex retrievers over a saved tree or a running
service (docs/integrations.md). Each framework's module imports it, so each is an extra of its own
(``dashrag[langchain]``, ``dashrag[llama-index]``); :mod:`dashrag.integrations.sources` needs neither."""
