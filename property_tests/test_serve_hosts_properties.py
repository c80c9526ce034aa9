"""Properties of the Host headers `runner serve` answers (runner_shell.web.hosts)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_shell.web.hosts import allowed_hosts

SETTINGS = settings(max_examples=200, deadline=None)


hosts = st.sampled_from(
    ("127.0.0.1", "127.0.0.2", "localhost", "::1", "0.0.0.0", "::", "192.168.1.5", "Box.lan")
)


@SETTINGS
@given(hosts, st.integers(1, 65535), st.sampled_from(("box", "Other")))
def test_the_bound_host_and_port_are_answered_and_no_other_port(
    host: str, port: int, hostname: str
) -> None:
    allowed = allowed_hosts(host, port, hostname)

    named = f"[{host}]" if ":" in host else host
    assert f"{named.lower()}:{port}" in allowed
    assert all(entry.endswith(f":{port}") and entry == entry.lower() for entry in allowed)
    if host not in ("0.0.0.0", "::"):
        assert f"{hostname.lower()}:{port}" not in allowed
