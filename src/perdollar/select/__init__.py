"""select stage."""
