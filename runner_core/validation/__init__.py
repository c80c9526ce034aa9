"""Validation of what an agent or a person hands the runner: the schema, the tree's invariants,
passed-node immutability, the status an agent claims, where children may appear, and the
runner-owned JSON documents read back.

Each layer collects every error and sorts it; none of them changes a tree or decides what the
runner does about an error (that is `runner_core.iteration`).

Offers one module per layer (`schema`, `invariants`, `immutability`, `status`,
`child_additions`, each a `<thing>_findings` function returning its sorted findings),
`review.review_tree_change` running them all on an agent's change, `loading.parse_tree` reading
a valid tree from its text, and `finding.Finding`, one error as a value, with `finding.messages`
giving the lines the runner prints for some findings.
"""
