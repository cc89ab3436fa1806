"""The one kind of error a page shows as a notice and goes on: input the user can fix.

Pages catch InputError alone (ui.page.Page.guard), so a bug in the engine, pandas or plotly reaches
the tests as a failure instead of a polite warning. It subclasses ValueError, so callers that only
care that a value was refused still catch it.
"""


class InputError(ValueError):
    """Bad input from the user (an empty box, a width beyond the vocabulary, a prompt longer than the
    context); the message says what to change."""
