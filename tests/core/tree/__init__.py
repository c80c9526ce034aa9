"""Tests of core/tree."""
