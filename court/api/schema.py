"""The OpenAPI schema says every answer an operation can give, errors included.

drf-spectacular documents an operation's success alone. The errors below come from DRF itself
(authentication, permissions, validation, pagination, throttling) and from our rate limits, and
apply to operations by what they are: a client reading the schema learns every status it may
see, and schemathesis holds the API to it (tests/api/test_schemathesis.py).
"""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer
from rest_framework import permissions, serializers

# Permissions that never refuse a signed-in caller on their own (IsAuthenticated answers 401, not 403).
NEVER_FORBIDDEN = (permissions.AllowAny, permissions.IsAuthenticatedOrReadOnly, permissions.IsAuthenticated)


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, and what to do about it.")


class ValidationErrorSerializer(serializers.Serializer):
    """Each field of the request that was refused, named, with what is wrong with it."""

    detail = serializers.CharField(required=False, help_text="Why the request as a whole was refused.")
    non_field_errors = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="What is wrong with the fields taken together."
    )


def error(description: str, serializer=ErrorSerializer) -> OpenApiResponse:
    return OpenApiResponse(serializer, description=description)


INVALID = error("The request is invalid: each field refused is named with the reason.", ValidationErrorSerializer)
UNAUTHENTICATED = error("No valid credentials: this needs a signed-in caller, or the token given is not one.")
FORBIDDEN = error("The caller may not do this (staff only, not theirs, or a session request without its CSRF token).")
NOT_FOUND = error("Nothing of that id or name that the caller may see, or no such page of results.")
THROTTLED = error("Too many requests: the detail says how long to wait, as does the Retry-After header.")
UNAVAILABLE = error("Rate limits cannot be checked right now, so nothing new is accepted; reads still work.")


class CourtAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, response in self.error_responses().items():
            if code not in responses:
                responses[code] = self._get_response_for_code(response, code, direction=direction)
        return responses

    def _get_request_body(self, direction="request"):
        body = super()._get_request_body(direction)
        # drf-spectacular leaves a body of variants optional; each variant has required fields.
        if body is not None and isinstance(self.get_request_serializer(), PolymorphicProxySerializer):
            body["required"] = True
        return body

    def error_responses(self) -> dict[str, OpenApiResponse]:
        writes = self.method not in permissions.SAFE_METHODS
        errors = {}
        if (writes and self.get_request_serializer() is not None) or self._has_filters():
            errors["400"] = INVALID
        # Every route authenticates a token it is given, and refuses one that is not valid.
        errors["401"] = UNAUTHENTICATED
        if writes or not all(isinstance(permission, NEVER_FORBIDDEN) for permission in self.view.get_permissions()):
            errors["403"] = FORBIDDEN
        if "{" in self.path or self._is_paginated():
            errors["404"] = NOT_FOUND
        errors["429"] = THROTTLED
        if writes:
            errors["503"] = UNAVAILABLE
        return errors

    def _has_filters(self) -> bool:
        return self._is_list_view() and bool(getattr(self.view, "filterset_fields", None))

    def _is_paginated(self) -> bool:
        return self._is_list_view() and getattr(self.view, "pagination_class", None) is not None
