"""The form of a comment (a new one, or a change to your own)."""

from __future__ import annotations

from django import forms

from projects.services.comments import MAX_CHARS


class CommentForm(forms.Form):
    body = forms.CharField(
        label="Your comment", max_length=MAX_CHARS, strip=True, widget=forms.Textarea,
        error_messages={"required": "Write something first: the comment is empty.",
                        "max_length": f"A comment can be at most {MAX_CHARS} characters long."},
        help_text="Plain text is fine. **bold**, *italic*, lists and [links](https://example.org) "
                  "work too. Write @name to tell a team member.")
