"""Tests of shell/eval: the eval cases, their plan and their checks."""
