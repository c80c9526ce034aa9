"""`runner eval`: cases run in fresh workspaces, checked, classified and summarised."""
