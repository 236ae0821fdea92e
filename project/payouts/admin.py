"""Payouts in the admin, read-only (finance releases them through the ``payouts`` queue), and
the TOTP devices page narrowed to each user's own devices.

A session that can read a device's key (its QR code) can clone the phone, so the demo sets
``OTP_ADMIN_HIDE_SENSITIVE_DATA = True`` (django-otp then never shows a saved key or QR code)
and finance holds no TOTP device permission at all: ``make demo`` prints the device's secret
in the terminal instead. Users who may view devices (administrators) see only their own unless
they are superusers.
"""

from django.contrib import admin
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from project.demo.readonly import ReadOnlyAdmin

from .models import Payout


@admin.register(Payout)
class PayoutAdmin(ReadOnlyAdmin):
    list_display = ("reference", "payee", "account", "amount", "currency", "state", "paid_at")
    list_filter = ("state", "currency")
    search_fields = ("reference", "payee")
    readonly_fields = ("paid_by_bulk_action",)


class OwnTOTPDeviceAdmin(TOTPDeviceAdmin):
    """django-otp's TOTP device admin, owner-only for non-superusers."""

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user=request.user)

    def has_view_permission(self, request, obj=None):
        allowed = super().has_view_permission(request, obj)
        if obj is None or request.user.is_superuser:
            return allowed
        return allowed and obj.user_id == request.user.pk

    def has_change_permission(self, request, obj=None):
        allowed = super().has_change_permission(request, obj)
        if obj is None or request.user.is_superuser:
            return allowed
        return allowed and obj.user_id == request.user.pk


if admin.site.is_registered(TOTPDevice):
    admin.site.unregister(TOTPDevice)
admin.site.register(TOTPDevice, OwnTOTPDeviceAdmin)
