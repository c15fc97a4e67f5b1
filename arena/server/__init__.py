"""The competition server (issue 14): `arena serve`, uploads and the ladder."""
