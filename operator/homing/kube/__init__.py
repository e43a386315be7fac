"""Thin adapters around the engine: kopf handlers, the admission webhook, the
PlacementMemory store, TLS, Events, metrics and logs."""
