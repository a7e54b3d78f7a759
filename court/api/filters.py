"""The API's query filters: as strict as the schema says, and never a validation error for an id.

django-filter's defaults disagree with the schema drf-spectacular writes for them: an id filter
(ModelChoiceFilter) answers 400 for an id that names nothing (`?problem=0`), where a filter should
find no rows; a number filter on an integer field takes `1.5`; a boolean filter ignores
`?degenerate=maybe`. Here an id or an integer is a whole number, a boolean is `true` or `false`,
anything else is a 400 that names the parameter, and a well-formed id that names nothing matches
nothing (the view's queryset already holds only what the viewer may see).
"""

from django import forms
from django.db import models
from django_filters import rest_framework as filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field


@extend_schema_field(OpenApiTypes.INT)
class IntegerFilter(filters.Filter):
    field_class = forms.IntegerField


class StrictBooleanField(forms.TypedChoiceField):
    def __init__(self, *args, **kwargs):
        kwargs.pop("empty_value", None)
        super().__init__(*args, choices=[("true", "true"), ("false", "false")], coerce=lambda value: value == "true", **kwargs)


@extend_schema_field(OpenApiTypes.BOOL)
class BooleanFilter(filters.Filter):
    field_class = StrictBooleanField


class FilterSet(filters.FilterSet):
    FILTER_DEFAULTS = {
        **filters.FilterSet.FILTER_DEFAULTS,
        models.ForeignKey: {"filter_class": IntegerFilter},
        models.IntegerField: {"filter_class": IntegerFilter},
        models.PositiveIntegerField: {"filter_class": IntegerFilter},
        models.PositiveSmallIntegerField: {"filter_class": IntegerFilter},
        models.SmallIntegerField: {"filter_class": IntegerFilter},
        models.BooleanField: {"filter_class": BooleanFilter},
    }


class FilterBackend(filters.DjangoFilterBackend):
    """The views' `filterset_fields`, made with the filters above."""

    filterset_base = FilterSet
