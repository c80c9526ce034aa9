"""What one agent session is told: the prompt pack's sections, their order and headings, and
what is dropped and cut to fit its byte budget, with or without a repository's template.

Decides only how given texts are arranged; never reads a template or a context file (the shell
does) and never knows the iteration that asks (`runner_core.iteration.facts` fills it in).
"""
