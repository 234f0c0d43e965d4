"""CORS for the widget endpoints, driven by the widget keys' allowed origins (django-cors-headers' signal).

A preflight carries no X-Widget-Key, so it is allowed when any active key lists the origin; a request
that names its key gets CORS headers only for that key's origins (the view also refuses other origins).
"""

from __future__ import annotations

import logging
import re

from corsheaders.conf import conf
from corsheaders.signals import check_request_enabled
from django.db import DatabaseError
from django.dispatch import receiver
from django.http import HttpRequest

from oraculo.api.authentication import HEADER, REQUEST_ATTRIBUTE
from oraculo.selectors import origin_allowed_by_any_key, widget_key_get_active

logger = logging.getLogger(__name__)


@receiver(check_request_enabled, dispatch_uid="oraculo.cors.widget_key_origins")
def widget_key_origins(sender, request: HttpRequest, **kwargs) -> bool:
    if not re.match(conf.CORS_URLS_REGEX, request.path_info):
        return False
    origin = request.headers.get("Origin", "")
    if not origin:
        return False
    try:
        key = request.headers.get(HEADER, "").strip()
        if key:
            widget_key = getattr(request, REQUEST_ATTRIBUTE, None)
            if widget_key is None or widget_key.key != key:
                widget_key = widget_key_get_active(key=key)
            return widget_key is not None and widget_key.allows_origin(origin)
        return origin_allowed_by_any_key(origin=origin)
    except DatabaseError:
        logger.exception("CORS check: the database is unreachable")
        return False
