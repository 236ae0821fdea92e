"""Orders in the admin, read-only: orders are placed through ``place_order`` (which enqueues
the receipt), never typed into a form that would skip it."""

from django.contrib import admin

from project.demo.readonly import ReadOnlyAdmin

from .models import Checkout, Order


@admin.register(Order)
class OrderAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "tenant",
        "customer_email",
        "total",
        "currency",
        "status",
        "created_at",
        "receipt_sent_at",
    )
    list_filter = ("tenant", "status", "currency")
    search_fields = ("customer_email",)
    date_hierarchy = "created_at"


@admin.register(Checkout)
class CheckoutAdmin(ReadOnlyAdmin):
    """Checkouts and what their saga did; the saga's steps show on its job's page."""

    list_display = (
        "id",
        "customer_email",
        "address",
        "total",
        "currency",
        "state",
        "charge_ref",
        "reservation_ref",
        "shipment_ref",
        "refunded_at",
        "released_at",
    )
    list_filter = ("state",)
