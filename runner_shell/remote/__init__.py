"""Leaf jobs on other machines: the wire, the worker's job, and the executors that carry them."""
