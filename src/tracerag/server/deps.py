"""What a route needs from the app, as FastAPI dependencies."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from tracerag.server.state import ServerState


def get_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


State = Annotated[ServerState, Depends(get_state)]

# The path parameters the API's routes share, described once for the OpenAPI schema (docs/reference/api.md).
CollectionName = Annotated[
    str, Path(description="The collection's name: its folder's name, as GET /api/collections lists it.")
]
RunId = Annotated[str, Path(description="A run's id: its trail file's name, as the trail list gives it.")]
JobId = Annotated[
    str, Path(description="A job's id, as the answer that started it gave it (GET /api/jobs lists them).")
]
ConversationId = Annotated[
    str, Path(description="A catalog conversation's id, as POST /api/catalog/conversations gave it.")
]
DocumentId = Annotated[
    str, Path(description="The document's id in the collection; it may hold `/`, `#` or spaces (URL-encode them).")
]
