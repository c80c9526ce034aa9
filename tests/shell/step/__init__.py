"""Tests of shell/step."""
