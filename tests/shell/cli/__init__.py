"""Tests of shell/cli."""
