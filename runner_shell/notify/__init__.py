"""Notifications through Apprise (`[notify]`, docs/notify.md): sent beside the loop, never
holding it up."""
