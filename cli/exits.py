"""Exit statuses, the same for every command, and the line that lists them in every --help."""

from __future__ import annotations

HOLDS = 0  # every claim checked holds (and nothing was claimed that was not checked)
BROKEN = 1  # a rule (or the plain protocol) is broken
USAGE = 2  # a bad argument or input file: nothing was judged
CRASHED = 3  # the checked scheduler crashed or hung, or stallfree itself failed: nothing was judged past it
NOTHING_JUDGED = 4  # the input was read and holds nothing to judge (a trace with a header and no step)
INTERRUPTED = 130  # Ctrl-C

EPILOG = (
    "exit status: 0 every checked claim holds; 1 a rule broken; 2 usage or input error; "
    "3 the checked scheduler crashed or hung, or an internal error; 4 nothing to judge (a trace with no step); "
    "130 interrupted"
)


def interrupted(error: BaseException) -> bool:
    """Whether a Ctrl-C is behind `error`: Python wraps one raised while a class is made (a
    dataclass's `__set_name__`, as a module imports) in a RuntimeError, and it is still the user's."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
