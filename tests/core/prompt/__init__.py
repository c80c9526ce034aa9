"""Tests of core/prompt."""
