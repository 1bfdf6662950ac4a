"""Packwise: warehouse order-fulfilment service."""
