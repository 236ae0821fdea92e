"""Orders in the admin, read-only: orders are placed through ``place_order`` (which enqueues
the receipt), never typed into a form that would skip it."""

from django.contrib import admin

from .models import Order


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ("id", "customer_email", "total", "currency", "created_at", "receipt_sent_at")
    list_filter = ("currency",)
    search_fields = ("customer_email",)
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
