"""Whether the process is well: liveness from the loops and watches, garbage-collection pauses."""
