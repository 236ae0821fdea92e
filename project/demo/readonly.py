"""The demo's admin base for rows its services and jobs write: shown, never edited by hand."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """No add, change or delete: a form would skip the service that enqueues the row's jobs."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
