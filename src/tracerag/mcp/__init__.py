"""`tracerag mcp`: the collections and the catalog as tools for another assistant, over the Model Context
Protocol (stdio or streamable HTTP). The tools do their work through the web app's service functions, and every
call is recorded in the trail with the client's name (`server.py`, `tools.py`)."""
