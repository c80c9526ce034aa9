"""Tests of core/validation."""
