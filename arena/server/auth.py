"""Who is asking: Bearer tokens for the JSON API, an HttpOnly cookie plus a CSRF token for
the pages' forms.

The API takes only ``Authorization: Bearer <token>`` (a browser never adds that header by
itself, so the API needs no CSRF defence); pages take only the ``arena_session`` cookie
(HttpOnly, SameSite=Strict), and every form POST must also carry the ``csrf`` field equal to
the ``arena_csrf`` cookie (double submit). Signing in with the API token starts a session
with its own token: signing out ends it in the store, and the API token never sits in a
cookie. Tokens and sessions are checked by the store, which keeps only their hashes.
"""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING

from fastapi import Request, Response

from arena.server.ratelimit import FailedSignins
from arena.store.competition_models import Author

if TYPE_CHECKING:
    from arena.store.competition import CompetitionStore

SESSION_COOKIE = "arena_session"
LEGACY_TOKEN_COOKIE = "arena_token"
"""Where older servers kept the API token itself: cleared at the next sign-in."""
CSRF_COOKIE = "arena_csrf"
CSRF_FIELD = "csrf"
MAX_TOKEN_CHARS = 200
"""Longer credentials are refused before any hashing (a token is 43 characters)."""


class AuthError(Exception):
    """Refused: ``status`` 401 (who are you?) or 403 (not allowed), with a readable reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _lookup(store: CompetitionStore, token: str) -> Author | None:
    if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        return None
    return store.author_by_token(token)


def client_address(request: Request) -> str:
    return request.client.host if request.client else "?"


def _signins(request: Request) -> FailedSignins | None:
    """The app's failed sign-in ledger (None for a bare Request in a unit test)."""
    state = getattr(request.app.state, "arena", None) if "app" in request.scope else None
    return getattr(state, "signins", None)


def bearer_author(request: Request, store: CompetitionStore) -> Author | None:
    """The API caller: None without an Authorization header; a bad token is a 401, never
    silently anonymous (a client with a typo should hear about it), logged and counted
    against the address (:class:`FailedSignins`: 429 past the limit)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "use 'Authorization: Bearer <token>'")
    signins = _signins(request)
    if signins is not None:
        signins.check(client_address(request))
    author = _lookup(store, token.strip())
    if author is None:
        if signins is not None:
            signins.failed(client_address(request), "API token")
        raise AuthError(401, "unknown or revoked token")
    return author


def require_author(request: Request, store: CompetitionStore) -> Author:
    author = bearer_author(request, store)
    if author is None:
        raise AuthError(401, "this needs a token: 'Authorization: Bearer <token>'")
    return author


def require_organiser(request: Request, store: CompetitionStore) -> Author:
    author = require_author(request, store)
    if not author.organiser:
        raise AuthError(403, "only the organiser may do this")
    return author


def cookie_author(request: Request, store: CompetitionStore) -> Author | None:
    """The page viewer, from the session cookie (None: anonymous, also for a stale,
    ended or expired session). The cookie holds a session token, never an API token."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        return None
    return store.author_by_session(token)


def csrf_token(request: Request) -> str:
    """The CSRF token this browser's forms carry (made on first sight; see
    :func:`remember_csrf`)."""
    existing = request.cookies.get(CSRF_COOKIE)
    if existing and 20 <= len(existing) <= 100 and existing.isascii():
        return existing
    made = getattr(request.state, "new_csrf", None)
    if made is None:
        made = secrets.token_urlsafe(32)
        request.state.new_csrf = made
    return str(made)


def remember_csrf(request: Request, response: Response) -> None:
    """Set the CSRF cookie when this request made a new token."""
    made = getattr(request.state, "new_csrf", None)
    if made is not None:
        response.set_cookie(
            CSRF_COOKIE,
            str(made),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )


def check_csrf(request: Request, submitted: str | None) -> None:
    """A form POST must echo the CSRF cookie, and come from this origin when the browser
    says where it comes from."""
    origin = request.headers.get("origin")
    if origin is not None:
        expected = f"{request.url.scheme}://{request.url.netloc}"
        if origin != expected:
            raise AuthError(403, "form posted from another site")
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not submitted or not hmac.compare_digest(cookie, submitted):
        raise AuthError(403, "the form expired or came from elsewhere; reload the page and retry")


def start_session(
    request: Request, response: Response, store: CompetitionStore, author: Author, seconds: float
) -> None:
    """A new session of ``author`` (its own revocable token) in the cookie."""
    session = store.create_session(author.id, seconds, author.member_id)
    response.delete_cookie(LEGACY_TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
    response.set_cookie(
        SESSION_COOKIE,
        session,
        max_age=int(seconds),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def end_session(request: Request, response: Response, store: CompetitionStore) -> None:
    """Sign out: the session ends in the store (a copied cookie stops working too)."""
    token = request.cookies.get(SESSION_COOKIE)
    if token and len(token) <= MAX_TOKEN_CHARS and token.isascii():
        store.end_session(token)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
