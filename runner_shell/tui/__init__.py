"""`runner tui` (Textual), imported only by that command on a terminal."""
