"""greeter: Greets people."""
