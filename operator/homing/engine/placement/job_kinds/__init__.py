"""Which topology a job asks for (behaviour.md "Topology"): what the pod and its PodGroup say (`facts`),
one module per job kind (super-pod, rack-windowed super-pod, multilevel, HyperNode) over
the shared parsing (`common`), the choice among them (`select`), and the levels they give
(`levels`) for the strategies to turn into terms."""
