"""One small pure rule per file, each turning facts into one weighted term (behaviour.md "Weights").
The weights live in homing.config.Weights; the order they must keep in weights.py."""
