"""The errors TRACE raises on purpose. The CLI turns them into messages and exit codes; nothing else catches them."""

from typing import Any, TypedDict


class TraceError(Exception):
    """Base of every error that the user can act on."""


class ConfigError(TraceError):
    """A setting has a value that cannot be used."""


class CollectionError(TraceError):
    """A collection directory is missing, damaged, or built with something else than asked."""


class ModelMismatchError(CollectionError):
    """The collection was built with another embedding model than the one asked for."""


class Where(TypedDict):
    """Where a record was read: the keyword arguments of `RecordError` (and of ingest's `RecordWarning`), built once
    per record and passed as `**where` to each error about it."""

    file: str
    line: int | None


class RecordError(TraceError):
    """One input record cannot be read. Carries where, so the ingest can report it and go on."""

    def __init__(self, message: str, *, file: str, line: int | None = None, record: str | None = None):
        self.file = file
        self.line = line
        self.record = record
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {message}")
        self.reason = message

    def __reduce__(self) -> tuple:
        # Pickled with what it was made of (a distributed ingest's workers send their skipped records back):
        # an exception is rebuilt from `args`, which hold only the message.
        return (_record_error, (type(self), self.reason, self.file, self.line, self.record))


def _record_error(cls: type[RecordError], reason: str, file: str, line: int | None, record: str | None) -> RecordError:
    return cls(reason, file=file, line=line, record=record)


class EmbeddingError(TraceError):
    """The embedding model cannot be loaded or answered badly."""


class EngineError(TraceError):
    """The search engine's server could not be reached, or refused a request, after the retries its settings allow
    (the message names the server, the status and what to do)."""


class DataUnavailableError(TraceError):
    """Data the user asked for is neither on disk nor reachable."""


class LLMError(TraceError):
    """The language model could not be reached, or kept answering with something unusable."""


class LLMCallFailed(LLMError):
    """A model call that got no answer at all (endpoint unreachable, an HTTP error after its retries). The failed
    call (an `llm.Completion` with its attempts and error) travels with the error, so that the stage that made it
    records it in the trail like any other call before the run ends."""

    def __init__(self, message: str, completion: Any):
        super().__init__(message)
        self.completion = completion


class TrailError(TraceError):
    """A trail file is missing, or a line of it does not match the event schema. A damaged line carries its file
    and line, so that a listing can show them apart from the reason."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        self.file = file
        self.line = line
        self.reason = message
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {message}" if file else message)


class CollectionBusyError(CollectionError):
    """Another process holds what this one needs (the writer lock, or the index it has not handed over yet).
    Temporary: the CLI exits 3 so that a script can retry, or the user can pass --wait."""


class ReadOnlyError(CollectionError):
    """The command must write, and the collection cannot be written here (read-only storage, another user's files)."""


class NothingIngestedError(ConfigError):
    """A first ingest read no document: no collection was made. Carries the ingest's report (what was skipped, and
    why), so that the CLI can print it before the error."""

    def __init__(self, message: str, report: object):
        super().__init__(message)
        self.report = report


class SelectionError(TraceError):
    """A research question's selection cannot be found, read or written as asked (no such question, an ambiguous
    prefix, a bad span, a selection file that cannot be opened)."""
