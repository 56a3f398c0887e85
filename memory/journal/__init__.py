"""The turn journal: what each captured turn became and what each injection held, and why
(README "Turn journal")."""
