"""Tests of core/audit."""
