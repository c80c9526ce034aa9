"""Tests of shell/agents."""
