"""`runner init`, `runner start` and `runner demo`: scaffolding `.runner/`, establishing a
run's identity and the throw-away demo.
"""
