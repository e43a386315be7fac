"""What homing tells people: metrics, structured logs, Events."""
