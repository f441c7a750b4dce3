from django.db import migrations

# TRUNCATE fires no row trigger, so the append-only trigger of 0003 never saw it: this statement
# trigger refuses it too. The test suite empties its database between tests with TRUNCATE and
# says so by setting autocoder.audit_log_truncate=on on its connections (PGOPTIONS, see
# config/testing/pytest_plugin.py); the portal never sets it.
NO_TRUNCATE_SQL = """
CREATE FUNCTION projects_auditentry_no_truncate() RETURNS trigger AS $$
BEGIN
    IF coalesce(current_setting('autocoder.audit_log_truncate', true), '') = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only (TRUNCATE refused)';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER projects_auditentry_no_truncate
    BEFORE TRUNCATE ON projects_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION projects_auditentry_no_truncate();
"""
DROP_NO_TRUNCATE_SQL = """
DROP TRIGGER IF EXISTS projects_auditentry_no_truncate ON projects_auditentry;
DROP FUNCTION IF EXISTS projects_auditentry_no_truncate();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('projects', '0009_run_started_by'),
    ]

    operations = [
        migrations.RunSQL(NO_TRUNCATE_SQL, DROP_NO_TRUNCATE_SQL),
    ]
