"""The shop page's one form: a demo order a visitor places from the browser."""

from decimal import Decimal

from django import forms


class DemoOrderForm(forms.Form):
    customer_email = forms.EmailField(initial="visitor@example.com", label="Email")
    total = forms.DecimalField(
        initial=Decimal("19.90"), min_value=Decimal("0.01"), max_digits=10, decimal_places=2
    )
