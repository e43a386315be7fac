"""The replicas: who leads (a Lease), and what only the leader writes to pods (the deletion-cost marks and their guard)."""
