"""Tests of shell/setup: scaffolding `.runner/`, starting a run, the demo and its agent."""
