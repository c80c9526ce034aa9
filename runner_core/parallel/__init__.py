"""Many leaves at once: which open leaves run side by side (`frontier`), when jobs start and in
which slots (`scheduling`), how a finished job's task tree joins the run branch's
(`tree_merge`), in which order finished jobs merge (`queue`) and how one merges onto the head
(`job_merge`).

Decides the rules of parallel iterations as pure functions of trees, jobs and iteration
numbers; never starts a job, reads a checkout or runs git (runner_shell/loop/parallel_loop.py
does, docs/parallel.md).
"""
