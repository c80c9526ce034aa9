"""Tests of core/changes."""
