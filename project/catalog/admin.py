"""Products in the admin, read-only (the vendor catalog's pipeline writes them), with what the
pipeline did above the list: its counts since it began, drops by reason, and its latest file
imports with the rows they refused; and a button that imports the vendor's file again.

Importing needs the add permission on file imports (as litejobs' own import form does);
viewers see the counts only.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import path
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_POST

from litejobs.models import ImportRun
from project.demo.readonly import ReadOnlyAdmin

from .models import Product
from .pipelines import Reason, catalog
from .seed import FILE_NAME, copy_fixture

#: The latest imports shown above the products, and the refused rows shown per import.
RECENT_IMPORTS = 5
REFUSALS_SHOWN = 10
IMPORT_PERMISSION = "litejobs.add_importrun"


@admin.register(Product)
class ProductAdmin(ReadOnlyAdmin):
    list_display = ("sku", "name", "price", "currency", "price_eur")
    list_filter = ("currency",)
    search_fields = ("sku", "name")

    def get_urls(self):
        import_view = self.admin_site.admin_view(self.import_view)
        return [path("import/", import_view, name="catalog_product_import"), *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        stats = catalog.stats()
        imports = ImportRun.objects.filter(pipeline=catalog.name)[:RECENT_IMPORTS]
        context = {
            "pipeline": catalog,
            "stats": stats,
            "drops": [(reason.value, stats["dropped"][reason]) for reason in Reason],
            "imports": [(run, run.refusals.all()[:REFUSALS_SHOWN]) for run in imports],
            "file_name": FILE_NAME,
            "can_import": request.user.has_perm(IMPORT_PERMISSION),
        }
        return super().changelist_view(request, {**context, **(extra_context or {})})

    @method_decorator(require_POST)
    def import_view(self, request):
        """Import the vendor's file (copied again from the fixture if it went missing)."""
        if not request.user.has_perm(IMPORT_PERMISSION):
            raise PermissionDenied
        copy_fixture()
        run = catalog.import_file(FILE_NAME)
        self.message_user(
            request,
            f"Import #{run.pk} of {FILE_NAME} started: the worker runs it. Reload this page "
            "for its counts; rows identical to the stored products are dropped as duplicates.",
        )
        return redirect("admin:catalog_product_changelist")
