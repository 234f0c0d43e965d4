"""Numeric settings under the least value the product works with are refused at startup, by name."""

from __future__ import annotations

import pytest

from biblioteca import checks as biblioteca_checks
from oraculo import checks as oraculo_checks


def test_the_defaults_pass():
    assert biblioteca_checks.limit_settings() == []
    assert oraculo_checks.limit_settings() == []


@pytest.mark.parametrize(
    ("check", "floors", "check_id"),
    [
        (biblioteca_checks.limit_settings, biblioteca_checks.LIMIT_FLOORS, "biblioteca.E016"),
        (oraculo_checks.limit_settings, oraculo_checks.LIMIT_FLOORS, "oraculo.E001"),
    ],
)
def test_each_setting_under_its_floor_is_named(settings, check, floors, check_id):
    for name, floor in floors.items():
        setattr(settings, name, floor)
        assert check() == [], f"{name} at its floor, {floor}, works"
        setattr(settings, name, floor - 1)
        (error,) = check()
        assert error.id == check_id and error.msg.startswith(f"{name} is ")
        setattr(settings, name, floor)


@pytest.mark.parametrize("name", ["DASHBOARD_GAP_SCORE", "DASHBOARD_DUPLICATE_SIMILARITY"])
def test_a_dashboard_threshold_no_cosine_reaches_is_refused(settings, name):
    setattr(settings, name, 1.2)
    assert [m.id for m in oraculo_checks.limit_settings()] == ["oraculo.E002"]
    setattr(settings, name, -1.0)
    assert oraculo_checks.limit_settings() == []


@pytest.mark.parametrize(
    ("name", "check", "check_id"),
    [
        ("LLM_BASE_URL", oraculo_checks.url_settings, "oraculo.E003"),
        ("PUBLIC_URL", oraculo_checks.url_settings, "oraculo.E003"),
        ("EMBEDDING_BASE_URL", biblioteca_checks.backend_settings, "biblioteca.E017"),
    ],
)
def test_a_url_setting_that_is_no_http_url_is_refused(settings, name, check, check_id):
    for bad in ("not a url", "htp:/localhost:9/v1", "ftp://files.example.com", "http://"):
        setattr(settings, name, bad)
        assert [m.id for m in check()] == [check_id], bad
    for good in ("", "http://embeddings:8000/v1", "https://help.example.com", "http://127.0.0.1:8001/v1"):
        setattr(settings, name, good)
        assert check() == [], good


@pytest.mark.parametrize("rate", ["lots", "10/fortnight", "ten/min", "10"])
def test_a_throttle_rate_drf_cannot_read_is_refused(settings, rate):
    from rest_framework.throttling import SimpleRateThrottle

    class Probe(SimpleRateThrottle):
        rate = "1/min"

    with pytest.raises((ValueError, KeyError)):
        Probe().parse_rate(rate)  # what every request the throttle guards would hit
    rates = dict(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], client_ip=rate)
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    (error,) = oraculo_checks.throttle_settings()
    assert error.id == "oraculo.E004" and "THROTTLE_CLIENT_IP" in error.msg
    rates["client_ip"] = "10/min"
    assert oraculo_checks.throttle_settings() == []
