"""Pages of a list: numbered from 1, as the schema says; a page past the last is a 404 that says how many there are."""

from rest_framework.pagination import PageNumberPagination


class Pages(PageNumberPagination):
    invalid_page_message = "There is no page {page_number} ({message}): pages are numbered from 1 to the last, given by `count`."

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
        return parameters
