"""Django's PostgreSQL backend, with the outage circuit around getting a connection.

Every connection the portal uses is asked for here, from the pool or directly: while the
circuit of its database is open the request fails at once, and a failure that says the server
is not answering opens it (autocoder/database/outage.py).
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base

from autocoder.database import outage


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        outage.circuit_for(self.settings_dict).refuse_if_open()
        try:
            return super().get_new_connection(conn_params)
        except Exception as error:
            if outage.is_outage(error):
                self.notice_outage(outage.describe(error))
            raise

    def notice_outage(self, reason: str) -> None:
        """The server does not answer: refuse connections at once until a probe gets one."""
        outage.circuit_for(self.settings_dict).open(reason, self.get_connection_params(),
                                                    self._discard_broken_connections)

    def _discard_broken_connections(self) -> None:
        """After an outage the pool still holds connections to the server that went away;
        drop them all at once (the pool would otherwise find them one request at a time,
        waiting longer after each)."""
        pool = self.pool
        if pool is not None:
            pool.check()
