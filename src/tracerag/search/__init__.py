"""A plain search, from the front doors down: `tracerag search`, the API's search and the web page's call
`report.explained_search`, which runs `run.run_search`: the query searched by retrieval, expanded as asked
(`expansions.py`: the LLM's variants, the translations, the vocabulary model's neighbours; the synonym map and the
researcher's words are retrieval's own), and recorded as a run in the trail. A service above `llm` and `trail`
(it asks the one and writes the other) and below the wings: the researcher's workflow (`research`: review, judge,
answer, selection) starts from the runs it records and is never on a plain search's way."""
