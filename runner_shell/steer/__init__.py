"""A person steering a run: `runner node ...` and `runner tell`, checked by the core and
committed as operator actions.
"""
