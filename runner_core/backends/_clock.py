"""How the agent CLIs show the time a limit resets: a 12-hour clock, a month's short name.

Decides what a shown time and day mean and when a reset shown to the minute is over. Never
reads a clock or the time zone database: the backend hands in the zone the CLI printed in.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, tzinfo

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def clock_time(hour: str, minute: str | None, half: str) -> time:
    """`3`, `51`, `PM` as the time 15:51."""
    hour_12 = int(hour) % 12
    return time(hour_12 + (12 if half.lower() == "pm" else 0), int(minute or 0))


def calendar_day(year: int, month: str, day: str) -> date | None:
    """The day `Nov` `23` of `year`, None when there is no such day."""
    if year >= date.max.year:
        return None
    try:
        return date(year, MONTHS.index(month) + 1, int(day))
    except ValueError:
        # `Feb 30th`: no such day, so no reset time to read.
        return None


def end_of_shown_minute(day: date, shown: time, tz: tzinfo) -> datetime:
    """When a reset shown as `shown` on `day` in `tz` is surely over."""
    # Both CLIs round the reset down to the minute: it is over by the end of that minute.
    return datetime.combine(day, shown, tzinfo=tz) + timedelta(minutes=1)
