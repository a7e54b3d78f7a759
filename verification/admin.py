"""Admin for the worker registry."""

from django.contrib import admin, messages

from verification.fanout import catch_up
from verification.models import GpuWorker


@admin.register(GpuWorker)
class GpuWorkerAdmin(admin.ModelAdmin):
    list_display = ["name", "arch", "device_name", "host", "live", "last_heartbeat", "started_at"]
    list_filter = ["arch"]
    search_fields = ["name", "host", "device_name"]
    readonly_fields = ["started_at", "last_heartbeat", "stopped_at"]
    actions = ["catch_up_architectures"]

    @admin.action(
        description="Catch up: evaluate every listed kernel missing on these workers' architectures",
        permissions=["change"],
    )
    def catch_up_architectures(self, request, queryset):
        for arch in sorted(set(queryset.values_list("arch", flat=True))):
            evaluations = catch_up(arch)
            self.message_user(request, f"{len(evaluations)} evaluations enqueued on {arch}.", messages.SUCCESS)

    @admin.display(boolean=True, description="Live")
    def live(self, obj):
        return obj.is_live
