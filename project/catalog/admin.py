"""Products in the admin, read-only (the vendor catalog's pipeline writes them), under what the
pipeline did: its counts since it began with the drops by reason, and links to litejobs' page
of the pipeline (drops per hour, imports and their refused rows) and to its import form, where
the vendor's file is imported again by its name in the media storage.
"""

from urllib.parse import urlencode

from django.contrib import admin
from django.urls import reverse

from project.demo.readonly import ReadOnlyAdmin

from .models import Product
from .pipelines import Reason, catalog
from .seed import FILE_NAME


@admin.register(Product)
class ProductAdmin(ReadOnlyAdmin):
    list_display = ("sku", "name", "price", "currency", "price_eur")
    list_filter = ("currency",)
    search_fields = ("sku", "name")

    def changelist_view(self, request, extra_context=None):
        stats = catalog.stats()
        site = self.admin_site.name
        context = {
            "pipeline": catalog,
            "stats": stats,
            "drops": [(reason.value, stats["dropped"][reason]) for reason in Reason],
            "file_name": FILE_NAME,
            "pipeline_url": reverse(
                f"{site}:litejobs_ingestcount_pipeline", kwargs={"name": catalog.name}
            ),
            "import_url": reverse(f"{site}:litejobs_importrun_add")
            + "?"
            + urlencode({"pipeline": catalog.name}),
            "can_import": request.user.has_perm("litejobs.add_importrun"),
        }
        return super().changelist_view(request, {**context, **(extra_context or {})})
