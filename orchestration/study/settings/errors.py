"""The study's one error: :class:`StudyError`. Standard library only, so that what raises it
without the study's stack (the frozen code tree) stays light."""


class StudyError(RuntimeError):
    """A study that cannot go on as asked (the message says what and where)."""


__all__ = ["StudyError"]
