"""Sandboxed fakes of Nexo's external destinations (fiscal provider, warehouse), each its own process."""
