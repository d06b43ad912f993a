"""collc.Error: every failure of a collc call, with collc's own message."""


class Error(RuntimeError):
    """A collc call failed. `status` is the C API's status name ("COLLC_SPEC_ERROR"); the message
    is collc's (for a spec: file:line:col: error: ...)."""

    def __init__(self, message, status="COLLC_INVALID_ARGUMENT"):
        super().__init__(message)
        self.status = status
