"""Adapters: a runtime's pieces over agentcore.port's handle, one module per runtime, each an
optional extra (`pip install -e ".[langgraph]"`). Nothing else in agentcore imports them."""
