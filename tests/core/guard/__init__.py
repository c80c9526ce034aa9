"""Tests of core/guard."""
