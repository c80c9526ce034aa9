"""Tests of shell/views: the read-only commands' readings and their lines."""
