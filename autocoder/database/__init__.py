"""The portal's database backend: Django's PostgreSQL backend that fails fast while the server
does not answer (autocoder/database/outage.py). DATABASES' ENGINE names this package."""
