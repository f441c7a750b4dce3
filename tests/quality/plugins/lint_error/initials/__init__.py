"""initials: Initials of a name."""
