"""Agents plug in: an MCP server (``memory mcp``), coding-agent hooks
(``memory hook <event>``) and a backend for Anthropic's memory tool, all over ``StoreAPI``;
frameworks too: LangGraph's store (``langgraph_store``, the ``langgraph`` extra) and mem0's
``Memory`` class (``mem0_compat``).

``integrations.store.open_store_for`` is the one place that decides which store they reach.
The package imports ``shared`` only (``make lint``), and its verbs reach the CLI through the
``agent_memory.commands`` entry point (``shared.client.workers.discover_commands``).
"""
