"""The demo shop page: place an order, then watch its receipt job go from ready to done."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from litejobs.models import Job, JobState

from .forms import DemoOrderForm
from .jobs import send_receipt
from .models import Order
from .services import place_order

#: Orders the page lists (newest first); the admin has the rest.
RECENT_ORDERS = 10
#: Seconds between refreshes while a receipt is still pending.
REFRESH_SECONDS = 2


@require_http_methods(["GET", "POST"])
def home(request):
    """List recent orders with their receipt status; POST places one through ``place_order``."""
    if request.method == "POST":
        form = DemoOrderForm(request.POST)
        if form.is_valid():
            order = place_order(**form.cleaned_data)
            messages.success(request, f"Placed order #{order.pk}; its receipt job is queued.")
            return redirect("home")  # POST/redirect/GET: a reload does not order twice
    else:
        form = DemoOrderForm()
    # Newest placed first: the seeded history of the reports lists after the orders placed here.
    rows = receipt_rows(list(Order.objects.order_by("-created_at", "-id")[:RECENT_ORDERS]))
    pending = any(row["status"] != "sent" for row in rows)
    context = {"form": form, "rows": rows, "refresh": REFRESH_SECONDS if pending else None}
    return render(request, "orders/home.html", context, status=400 if form.errors else 200)


def receipt_rows(orders: list[Order]) -> list[dict]:
    """Each order with its receipt status: sent, or the state of its latest receipt job."""
    keys = {f"receipt:{order.pk}": order for order in orders}
    latest: dict[str, Job] = {}
    for job in Job.objects.filter(name=send_receipt.name, key__in=keys).order_by("id"):
        latest[job.key] = job  # ascending ids: the last one wins
    rows = []
    for key, order in keys.items():
        job = latest.get(key)
        if order.receipt_sent_at is not None:
            status, label = "sent", f"sent {order.receipt_sent_at:%H:%M:%S} UTC"
        elif job is None:
            status, label = "missing", "no receipt job"
        else:
            status, label = job.state, JobState(job.state).label
        rows.append({"order": order, "job": job, "status": status, "label": label})
    return rows
