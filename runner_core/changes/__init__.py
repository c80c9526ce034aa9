"""What an agent's work changes in the run's tree: the import rules over a scratch checkout's
listing (which paths the iteration's commit takes, which are only noted, which make the agent's
error), protected paths included.

Decides only over values the shell listed; never reads a file, runs git or knows the iteration
that asks.
"""
