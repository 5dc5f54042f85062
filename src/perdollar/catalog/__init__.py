"""catalog stage."""
