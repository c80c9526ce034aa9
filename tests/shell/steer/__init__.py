"""Tests of shell/steer: an operator's changes to a run, called in this process."""
