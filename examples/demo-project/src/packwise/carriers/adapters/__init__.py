"""One adapter module per carrier, built on carriers.client."""
