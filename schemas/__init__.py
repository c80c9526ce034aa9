"""JSON Schemas of runner's files; the source of truth, shipped inside the wheel as data."""
