"""Rate limits for every costly or sensitive entry point, pages and API alike.

One set of rates (REST_FRAMEWORK's DEFAULT_THROTTLE_RATES, from the COURT_THROTTLE_* settings) and
one counter per scope and caller, kept by DRF's throttles: starting a run from the demo form and
from the API spends the same budget. The caller is the signed-in user, else the client's address
(DRF's get_ident, which believes X-Forwarded-For only as far as COURT_TRUSTED_PROXIES says); a
log-in is also counted against the account it names, so spreading guesses over many addresses
does not help.

Counts live in the cache, Redis in services mode. When it cannot be reached, reads go on
unlimited and writes are refused with 503: an unmetered write is what the limits exist to stop.
The scoped rates (runs, submissions, ...) hold under concurrency: each accepted request takes one
of the rate's slots with an atomic add (`Slots`); DRF's own count reads, appends and writes back,
so requests arriving together all read the same count and all pass.
"""

import functools
import hashlib
import logging
import math

import redis
from django.shortcuts import render
from rest_framework.exceptions import APIException
from rest_framework.permissions import SAFE_METHODS
from rest_framework.throttling import AnonRateThrottle, BaseThrottle, SimpleRateThrottle, UserRateThrottle

logger = logging.getLogger(__name__)

# What each scope counts, for the message a refused person reads.
COUNTED = {
    "runs": "runs started",
    "submissions": "problems and candidates submitted",
    "reports": "hack reports filed",
    "login": "log-in attempts",
    "login_account": "log-in attempts for this account",
    "accounts": "sign-ups and password-reset mails",
    "tokens": "API tokens created or replaced",
}

UNAVAILABLE = (
    "Rate limits cannot be checked right now (the cache is unreachable), so nothing new is accepted; "
    "reading still works. Try again in a minute."
)


class RateLimitsUnavailable(APIException):
    status_code = 503
    default_detail = UNAVAILABLE
    default_code = "rate_limits_unavailable"


class FailOpenForReads:
    """A throttle that lets reads through and refuses writes (503) when the cache is unreachable."""

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except redis.RedisError as exc:
            logger.warning("rate limit %s not checked, the cache is unreachable: %s", type(self).__name__, exc)
            if request.method in SAFE_METHODS:
                return True
            raise RateLimitsUnavailable() from exc


class AnonThrottle(FailOpenForReads, AnonRateThrottle):
    pass


class UserThrottle(FailOpenForReads, UserRateThrottle):
    pass


def address(request) -> str:
    return f"address-{BaseThrottle().get_ident(request)}"


def caller(request) -> str:
    return f"user-{request.user.pk}" if request.user.is_authenticated else address(request)


def account_named(request) -> str | None:
    """The account a log-in names (hashed: a cache key holds no spaces or long user input)."""
    data = getattr(request, "data", None) or request.POST
    # A JSON body may be a list or a string: it names no account (the view then refuses it).
    username = str(data.get("username", "")).strip().lower() if hasattr(data, "get") else ""
    return "account-" + hashlib.sha256(username.encode()).hexdigest()[:32] if username else None


# Whose counter a scope's requests go to: the caller unless said here. Log-ins and new accounts are
# counted per address even when signed in, since signing up or in would otherwise reset the count.
COUNTED_BY = {"login": address, "login_account": account_named, "accounts": address}


class Slots:
    """A rate of `count` per `duration` seconds as `count` slots in the cache: a request is accepted
    when it takes a free one (cache.add, atomic in Redis and in the local cache), which it holds
    for `duration` seconds. So no two requests take one slot, however many arrive at once."""

    def __init__(self, cache, key: str, *, count: int, duration: float):
        # A key per slot, all read on every request: for the small rates of costly writes (20 runs an
        # hour), exact under concurrency; a rate of thousands a minute costs milliseconds a request.
        self.cache, self.duration = cache, duration
        self.keys = [f"{key}:slot:{n}" for n in range(count)]

    def take(self, now: float) -> bool:
        held = self.cache.get_many(self.keys)
        return any(self.cache.add(key, now, timeout=self.duration) for key in self.keys if key not in held)

    def wait(self, now: float) -> float:
        """Seconds until a slot is free."""
        held = self.cache.get_many(self.keys).values()
        if len(held) < len(self.keys):
            return 0.0
        return max(0.0, self.duration - (now - min(held)))


class SlotRateThrottle(SimpleRateThrottle):
    """DRF's throttle, counting in `Slots`."""

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        self.slots = Slots(self.cache, self.key, count=self.num_requests, duration=self.duration)
        return self.slots.take(self.now)

    def wait(self):
        return self.slots.wait(self.timer())


class Throttle(FailOpenForReads, SlotRateThrottle):
    """One scope's counter for one caller (COUNTED_BY)."""

    # Set by SimpleRateThrottle from THROTTLE_RATES[scope], which names every scope counted here.
    scope: str
    rate: str
    duration: int

    def __init__(self, scope: str):
        self.scope = scope
        super().__init__()

    def get_cache_key(self, request, view):
        ident = COUNTED_BY.get(self.scope, caller)(request)
        return None if ident is None else self.cache_format % {"scope": self.scope, "ident": ident}


class ScopedWrites:
    """An API view set whose create counts against its `throttle_scope`, its other actions against the read rates."""

    def get_throttles(self):
        return [Throttle(self.throttle_scope)] if self.action == "create" else super().get_throttles()


def limit_posts(*scopes: str):
    """A page's POSTs count against `scopes`; past a rate it answers 429 with Retry-After."""

    def decorator(view):
        @functools.wraps(view)
        def limited(request, *args, **kwargs):
            if request.method == "POST":
                throttles = [Throttle(scope) for scope in scopes]
                try:
                    refused = [throttle for throttle in throttles if not throttle.allow_request(request, None)]
                except RateLimitsUnavailable:
                    return render(request, "rate_limited.html", {"message": UNAVAILABLE}, status=503)
                if refused:
                    return too_many(request, refused)
            return view(request, *args, **kwargs)

        return limited

    return decorator


def too_many(request, refused: list[Throttle]):
    wait = max(math.ceil(max(throttle.wait() or throttle.duration, 1)) for throttle in refused)
    first = refused[0]
    message = f"Too many {COUNTED[first.scope]}: the limit is {first.rate.replace('/', ' per ')}. Try again in {wait} seconds."
    response = render(request, "rate_limited.html", {"message": message}, status=429)
    response["Retry-After"] = str(wait)
    return response
