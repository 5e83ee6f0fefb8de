"""LLM support for the agentic reranker.

Small, component-free pieces the LLM components build on:

* :mod:`dashrag.llm.tool_call` - one forced function call through litellm (lazy import);
* :mod:`dashrag.llm.selection` - the ``select_best_chunks`` tool schema and the strict
  check of an answer;
* :mod:`dashrag.llm.candidates` - numbering candidates so none can step outside its line;
* :mod:`dashrag.llm.sliding_window` - judging more candidates than fit one prompt;
* :mod:`dashrag.llm.redaction` - masking an API key in exceptions.

Nothing is imported here, so ``import dashrag.llm`` stays cheap (litellm is slow to import).
"""
