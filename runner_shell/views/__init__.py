"""The read-only commands (`status`, `history`, `show`, `report`, `metrics`, `follow`, `audit`,
`diff`): gathering facts for the core's views and printing them.

Never takes the runner lock and never writes a file.
"""
