"""Adapters that turn a framework's pipeline into an Oloproof staged system in one call.

- :mod:`oloproof.integrations.langchain`: a LangChain retriever and an LCEL chain (or a chat
  model and a prompt);
- :mod:`oloproof.integrations.llama_index`: a LlamaIndex retriever and response synthesizer
  (or a query engine's parts).

Each module imports its framework only when used; neither framework is a dependency of the
``oloproof`` package (``pip install oloproof[langchain]`` / ``oloproof[llama-index]``).
"""
