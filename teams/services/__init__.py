"""Writes of the teams app, one module per area; the team services are re-exported here."""

from teams.services.teams import (
    DEMO_TEAM_SLUG,
    DEMO_USERS,
    DemoData,
    demo_data_ensure,
    membership_add,
    team_create,
    team_settings_update,
)

__all__ = ["DEMO_TEAM_SLUG", "DEMO_USERS", "DemoData", "demo_data_ensure", "membership_add",
           "team_create", "team_settings_update"]
