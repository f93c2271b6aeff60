"""The ingest jobs: one ingest into a collection directory (run.py) and a distributed one on Ray (distributed.py).

They live in `ingest/` because they are what an ingest is, but they write through `Collection`, so they sit one
layer above the readers beside them (tests/test_layers.py places `ingest.jobs` with the collection): a reader
never imports a job. Nothing is imported here, so that a job's module loads only when that job runs.
"""
