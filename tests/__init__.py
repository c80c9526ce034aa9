"""The tests of runner, in rooms that mirror the packages."""
