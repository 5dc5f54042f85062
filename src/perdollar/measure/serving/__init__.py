"""A real HTTP model server on loopback and a bounded load generator to test it."""
