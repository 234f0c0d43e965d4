"""Oráculo's data: the widget keys that may ask, every real question asked, and the A/B evaluation runs."""

from __future__ import annotations

import re
import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from pgvector.django import VectorField

from config.validation import rate_problem


def new_public_key() -> str:
    return "wk_" + secrets.token_urlsafe(18)


_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
_HOST = re.compile(rf"{_LABEL}(\.{_LABEL})*|[0-9a-f.]*:[0-9a-f:.]*", re.IGNORECASE)  # a name, IPv4 or IPv6


def origin_problem(origin: object) -> str | None:
    """Why `origin` is not a browser origin (scheme://host[:port], nothing else), or None. `null` is what
    sandboxed frames and file: pages send: anyone can produce it, so it never identifies a site."""
    if not isinstance(origin, str) or not origin.strip():
        return "an origin is a non-empty string"
    if origin.strip().lower() == "null":
        return '"null" is not an origin: sandboxed frames and local files all send it'
    try:
        parts = urlsplit(origin.rstrip("/"))
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return f"{origin!r} is not an origin"
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or not _HOST.fullmatch(parts.hostname)
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
    ):
        return f"{origin!r} is not an origin such as https://www.example.com (scheme and host, no path)"
    return None


DEMO_KEY_NAME = "Demo page"


class WidgetKey(models.Model):
    """A public key for one site's help widget, scoped to one app, with its allowed origins and rate limit."""

    name = models.CharField(max_length=200)
    key = models.CharField(max_length=64, unique=True, default=new_public_key, editable=False)
    app = models.CharField(max_length=100, default="default")
    allowed_origins = models.JSONField(
        default=list,
        blank=True,
        help_text='Origins allowed to use this key, e.g. ["https://help.example.com"]. Empty: no browser origin.',
    )
    rate_limit = models.CharField(
        max_length=20, default="60/min", help_text="Requests per key: N/sec|min|hour|day."
    )
    daily_quota = models.PositiveIntegerField(
        default=2000,
        help_text="Requests per key and UTC day, whatever the rate: it also caps what the LLM costs.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=~models.Q(app=""), name="widgetkey_app_not_empty")]

    def __str__(self) -> str:
        return f"{self.name} ({self.app})"

    def clean(self) -> None:
        errors = {}
        if not (self.app or "").strip():
            errors["app"] = "A key answers from one app; an empty app would answer from every app."
        if not isinstance(self.allowed_origins, list):
            errors["allowed_origins"] = "A list of origins such as https://example.com."
        elif problems := [p for o in self.allowed_origins if (p := origin_problem(o))]:
            errors["allowed_origins"] = f"{problems[0][0].upper()}{problems[0][1:]}."
        if problem := rate_problem(self.rate_limit):
            errors["rate_limit"] = problem
        if self.daily_quota is not None and self.daily_quota < 1:
            errors["daily_quota"] = "At least 1 request a day; untick Is active to stop the key."
        if errors:
            raise ValidationError(errors)

    def allows_origin(self, origin: str) -> bool:
        """Only a real origin that the key lists; `null` never, even if the list were to hold it."""
        if not origin or origin_problem(origin):
            return False
        return origin.rstrip("/") in {o.rstrip("/") for o in self.allowed_origins if isinstance(o, str)}


class AnswerMode(models.TextChoices):
    LLM = "llm", "LLM"
    EXTRACTIVE = "extractive", "Extractive"


class Channel(models.TextChoices):
    """Which door a question came through: staff leave agents' questions out of the harness by it."""

    WIDGET = "widget", "Widget"
    API = "api", "API"
    MCP = "mcp", "MCP (agents)"


class OraculoQuery(models.Model):
    """One real question asked through the API or an agent, with everything needed to replay and judge it."""

    question = models.TextField()
    retrieval_question = models.TextField(
        blank=True,
        help_text="A follow-up's question as it was searched: rewritten with its thread's context.",
    )
    thread = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The first question of the conversation this one continues.",
    )
    previous = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="follow_ups",
        help_text="The question this one follows up.",
    )
    app = models.CharField(max_length=100, blank=True, db_index=True)
    source_type = models.CharField(max_length=50, blank=True)
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.WIDGET, db_index=True)
    answer = models.TextField(blank=True)
    answer_mode = models.CharField(max_length=20, choices=AnswerMode.choices, default=AnswerMode.EXTRACTIVE)
    chunk_ids = models.JSONField(default=list, blank=True)
    chunk_scores = models.JSONField(default=list, blank=True)
    top_score = models.FloatField(
        null=True, blank=True, help_text="The best passage's similarity; empty when nothing was found."
    )
    trimmed = models.BooleanField(default=False)
    trim_params = models.JSONField(default=dict, blank=True)
    tokens_before = models.PositiveIntegerField(default=0)
    tokens_in_context = models.PositiveIntegerField(default=0)
    latency_ms = models.JSONField(
        default=dict, blank=True, help_text="Per stage: embedding, search, trim, llm, total."
    )
    llm_model = models.CharField(max_length=200, blank=True)
    llm_error = models.TextField(blank=True)
    answer_truncated = models.BooleanField(
        default=False, help_text="The LLM's answer was longer than LLM_MAX_ANSWER_CHARS and was cut there."
    )
    widget_key = models.ForeignKey(
        WidgetKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="queries"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="oraculo_queries",
    )
    page_url = models.URLField(max_length=2000, blank=True)
    helpful = models.BooleanField(null=True, blank=True)
    feedback_comment = models.TextField(blank=True)
    feedback_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "oraculo_queries"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["app", "created_at"], name="oraculo_query_app_created")]
        verbose_name = "query"
        verbose_name_plural = "queries"

    def __str__(self) -> str:
        return self.question[:80]


class QueryVector(models.Model):
    """A logged question's vector, to group near-duplicates on the gaps dashboard. A table of its own: inline,
    1.5 KB of vector would triple the width of every log row that the dashboard's aggregates scan."""

    query = models.OneToOneField(
        OraculoQuery, primary_key=True, on_delete=models.CASCADE, related_name="vector"
    )
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)

    class Meta:
        db_table = "oraculo_query_vectors"

    def __str__(self) -> str:
        return f"vector of query {self.query_id}"


class EvalRun(models.Model):
    """One A/B evaluation (or calibration sweep) of retrieval with and without trimming."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    params = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress = models.PositiveIntegerField(default=0, help_text="Questions evaluated so far.")
    total = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    sweep = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life of its worker.")
    attempt = models.PositiveIntegerField(
        default=0,
        help_text="Raised each time the run is claimed or queued again; a worker writes only while its "
        "attempt is the current one, so a stalled original and its replacement never both do.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "evaluation run"

    def __str__(self) -> str:
        return f"Evaluation #{self.pk} ({self.status})"


class EvalResult(models.Model):
    """One question's outcome in an evaluation run: its per-variant `variants` object."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveIntegerField()
    question = models.TextField()
    expected_answer = models.TextField(blank=True)
    variants = models.JSONField(default=dict)
    answer_similarity = models.FloatField(
        null=True, blank=True, help_text="Cosine of the two variants' answers, when synthesized."
    )
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run_id", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "position"], name="evalresult_unique_position")]

    def __str__(self) -> str:
        return self.question[:80]
