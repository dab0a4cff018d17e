"""The exception tree.

    TriageError                 anything triagebot reports to the user as one line
    ├── InputError              an input (file, stdin, URL) that cannot be read as a message
    ├── RulesError              a rules/ data file that fails validation (names file and line)
    ├── MessageError            bytes that are no message at all (empty, binary), before naming the input
    ├── SourceError             ingest: a source cannot be read now (triagebot.ingest.protocol)
    ├── StoreError              store: the database cannot do it (triagebot.store.protocol)
    │   ├── SchemaTooNewError   written by a newer triagebot
    │   └── StoreBusyError      another writer held it past the busy timeout
    ├── ExecutorError           reproduce: a host cannot run a command (…executors.protocol)
    │   └── ConnectionLost      the host stopped answering (a reboot): reconnect() may help
    ├── OutputError             reproduce: a benchmark's output lacks its metrics (…outputs)
    ├── RunError                reproduce: a rerun cannot go on (…runner)
    └── NotifyError             notify: Slack said no (method, channel, code; …notify.slack)
"""


class TriageError(Exception):
    """Base of every error triagebot reports as one line."""


class InputError(TriageError):
    """An input that cannot be read: names the input and what is wrong with it."""

    def __init__(self, input_name: str, problem: str) -> None:
        super().__init__(f"{input_name}: {problem}")
        self.input_name = input_name
        self.problem = problem


class RulesError(TriageError):
    """A rules file that fails validation."""


class MessageError(TriageError):
    """Bytes that are not a message at all (empty, binary); the caller names the input."""
