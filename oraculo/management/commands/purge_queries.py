"""`manage.py purge_queries --older-than 90d`: retention for the question log, which can hold personal data."""

from __future__ import annotations

import re
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from oraculo.actions import queries_purge

AGE = re.compile(r"^\s*(\d+)\s*([hdw])\s*$", re.IGNORECASE)
UNITS = {"h": ("hours", "hour"), "d": ("days", "day"), "w": ("weeks", "week")}


def parse_age(text: str) -> tuple[timedelta, str]:
    """`90d`, `12h` or `4w` as a timedelta and a readable description."""
    match = AGE.match(text or "")
    if not match or int(match.group(1)) == 0:
        raise CommandError(
            f"--older-than must be a positive number of hours, days or weeks such as 12h, 90d or "
            f"4w, not {text!r}."
        )
    n, unit = int(match.group(1)), match.group(2).lower()
    plural, singular = UNITS[unit]
    try:
        age = timedelta(**{plural: n})
    except OverflowError:
        raise CommandError(
            f"--older-than {text.strip()} is longer than any date: at most 999999999d."
        ) from None
    return age, f"{n} {singular if n == 1 else plural}"


class Command(BaseCommand):
    help = "Delete logged questions older than an age (e.g. 90d, 12h, 4w): they can hold personal data."

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            required=True,
            metavar="AGE",
            help="Delete queries asked longer ago than this: Nh, Nd or Nw (e.g. 90d).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be deleted; delete nothing."
        )

    def handle(self, *args, **opts):
        age, described = parse_age(opts["older_than"])
        count = queries_purge(older_than=age, dry_run=opts["dry_run"])
        noun = "query" if count == 1 else "queries"
        verb = "would delete" if opts["dry_run"] else "deleted"
        prefix = "dry run: " if opts["dry_run"] else ""
        self.stdout.write(f"{prefix}{verb} {count} {noun} older than {described}")
