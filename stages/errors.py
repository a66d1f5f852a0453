"""The one exception type for mistakes a user can make and fix."""


class DorylusError(Exception):
    """A user-caused error: the message says what was wrong and how to fix it.

    The CLI prints the message without a traceback and exits with status 2.
    """
