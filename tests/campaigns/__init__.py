"""Tests of campaigns."""
