"""Tests of shell/web."""
