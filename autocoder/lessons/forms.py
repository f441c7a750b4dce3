from __future__ import annotations

from typing import Any

from django import forms

from autocoder.lessons.extraction import MAX_FIELD_CHARS, MAX_TITLE_CHARS, clean_tags
from autocoder.lessons.models import Lesson


class LessonForm(forms.Form):
    kind = forms.ChoiceField(choices=Lesson.Kind.choices)
    title = forms.CharField(max_length=MAX_TITLE_CHARS,
                            error_messages={"required": "Give the lesson a title."})
    avoidance_rule = forms.CharField(
        label="Rule to follow", max_length=MAX_FIELD_CHARS,
        error_messages={"required": "Write the rule a future run should follow."},
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What a future run should do (or avoid), in one or two sentences.")
    resolution = forms.CharField(
        required=False, max_length=MAX_FIELD_CHARS, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What fixed the mistake, or the approach that worked.")
    failed_approach = forms.CharField(
        required=False, max_length=MAX_FIELD_CHARS, widget=forms.Textarea(attrs={"rows": 3}))
    error_signature = forms.CharField(
        required=False, max_length=300,
        help_text="The error with paths, line numbers and values stripped.")
    task_context = forms.CharField(
        required=False, max_length=MAX_FIELD_CHARS, widget=forms.Textarea(attrs={"rows": 2}))
    tags = forms.CharField(required=False, max_length=400,
                           help_text="Comma-separated, for example: dates, json, imports.")

    @classmethod
    def for_lesson(cls, lesson: Lesson, data: Any = None) -> LessonForm:
        initial = {name: getattr(lesson, name) for name in cls.base_fields if name != "tags"}
        initial["tags"] = ", ".join(lesson.tags)
        return cls(data, initial=initial)

    def clean_tags(self) -> list[str]:
        return list(clean_tags(self.cleaned_data["tags"].split(",")))


class SearchForm(forms.Form):
    MODES = (("semantic", "By meaning"), ("text", "By words"))

    q = forms.CharField(label="Search lessons", required=False, max_length=2000)
    mode = forms.ChoiceField(choices=MODES, required=False, initial="semantic",
                             widget=forms.RadioSelect)

    def clean_mode(self) -> str:
        return self.cleaned_data.get("mode") or "semantic"
