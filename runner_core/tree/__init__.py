"""The task tree: the immutable `Node`, its JSON text and canonical form, which leaf runs next,
how a decomposer's children join it, what an iteration's outcome does to a node's `passes` and
`attempts` (`state_update`), and what changed between two trees.

Decides the shape and order of a tree; never judges an agent's change to one (that is
`runner_core.validation`) and never reads or writes a file.
"""
