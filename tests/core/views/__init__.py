"""Tests of core/views."""
