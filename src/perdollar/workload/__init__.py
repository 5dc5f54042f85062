"""workload stage."""
