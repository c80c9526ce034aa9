"""Tests of shell."""
