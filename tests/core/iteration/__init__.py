"""Tests of core/iteration."""
