"""The web app and HTTP API (`tracerag serve`): on the library like the CLI, with no retrieval, agent or catalog
logic of its own. `create_app` builds it; `state` holds what a server process serves."""

from tracerag.server.app import create_app
from tracerag.server.state import ServerConfig

__all__ = ["ServerConfig", "create_app"]
