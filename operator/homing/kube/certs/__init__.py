"""The webhook's serving certificates: made, kept in a Secret or mounted, renewed while running, loaded without a restart."""
