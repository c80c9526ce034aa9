"""Tests of core/history."""
