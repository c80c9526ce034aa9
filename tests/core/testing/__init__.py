"""Tests of core/testing."""
