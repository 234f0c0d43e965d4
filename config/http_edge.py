"""What a request meets before any view: text the database cannot store in its query string or form is refused
with a 400, and the errors Django answers itself (an unknown path, a body over DATA_UPLOAD_MAX_MEMORY_SIZE) are
JSON under /api/, as every API error is."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from config.validation import text_problem

API_PREFIX = "/api/"


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _refusal(request: HttpRequest, message: str, status: int) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _form_problem(request: HttpRequest) -> str | None:
    """Why a query string or form value (or name) could not be stored: a filter or a form field handed to the
    database as it came would fail there with a 500."""
    sources = [request.GET]
    if request.method == "POST" and request.content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        sources.append(request.POST)
    for source in sources:
        for key, values in source.lists():
            for text in (key, *values):
                if problem := text_problem(text):
                    return problem
    return None


class StorableTextMiddleware:
    """Refuses, with a 400 naming why, a request whose query string or form holds a NUL or a lone surrogate."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            problem = _form_problem(request)
        except RequestDataTooBig:
            return bad_request(request, RequestDataTooBig())
        if problem:
            return _refusal(request, problem, 400)
        return self.get_response(request)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 400, as JSON under /api/; a body over the upload limit is a 413 that names the limit."""
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _refusal(request, f"The request body is too large: at most {limit:,} bytes.", 413)
    if _is_api(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 404, as JSON under /api/."""
    if _is_api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
