"""Tests of shell/loop."""
