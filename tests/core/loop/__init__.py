"""Tests of core/loop."""
