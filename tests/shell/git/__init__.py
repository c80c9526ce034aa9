"""Tests of shell/git."""
