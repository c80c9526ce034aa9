"""Tests of shell/store."""
