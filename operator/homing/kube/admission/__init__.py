"""The admission webhook: its HTTP server (h11), what a review may be, the decision's adapter,
and the webhook configuration homing keeps."""
