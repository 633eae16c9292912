"""Implementations with one seeded bug each: the kit must catch every one under the right clause."""
