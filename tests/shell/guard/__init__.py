"""Tests of shell/guard."""
