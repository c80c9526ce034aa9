"""What the read-only commands show: status, history, report, metrics, follow lines, the web
view's documents, the notices `[notify]` sends, and every `key=value` line, as pure functions
of gathered facts.

Decides every word printed; never gathers a fact or prints one.
"""
