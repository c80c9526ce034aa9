"""Many leaves at once: which open leaves run side by side (`frontier`), how a finished job's
task tree joins the run branch's (`tree_merge`) and in which order finished jobs merge
(`queue`).

Decides the rules of parallel iterations as pure functions of trees and iteration numbers;
never starts a job, reads a checkout or runs git (the loop does not yet run jobs in parallel).
"""
