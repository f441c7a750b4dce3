"""Published versions and their artifacts cannot change: a trigger refuses, whatever the client.

Yanking (yanked, yank_reason, yanked_at, yanked_by) is the one change a published version takes;
its code, version string, reports and provenance stay as they were approved.
"""

from __future__ import annotations

from django.db import migrations

VERSION_GUARD = """
CREATE OR REPLACE FUNCTION marketplace_version_immutable() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.status = 'published' THEN
      RAISE EXCEPTION 'published version % of plugin % cannot be deleted (yank it instead)',
        OLD.version, OLD.plugin_id USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status = 'published' AND (
       NEW.status IS DISTINCT FROM OLD.status OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.plugin_id IS DISTINCT FROM OLD.plugin_id OR NEW.files IS DISTINCT FROM OLD.files
       OR NEW.source_sha256 IS DISTINCT FROM OLD.source_sha256
       OR NEW.manifest IS DISTINCT FROM OLD.manifest OR NEW.readme IS DISTINCT FROM OLD.readme
       OR NEW.test_report IS DISTINCT FROM OLD.test_report
       OR NEW.safety_report IS DISTINCT FROM OLD.safety_report
       OR NEW.published_at IS DISTINCT FROM OLD.published_at) THEN
    RAISE EXCEPTION 'published version % of plugin % is immutable (only yanking is allowed)',
      OLD.version, OLD.plugin_id USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER marketplace_version_immutable
BEFORE UPDATE OR DELETE ON marketplace_pluginversion
FOR EACH ROW EXECUTE FUNCTION marketplace_version_immutable();

CREATE OR REPLACE FUNCTION marketplace_artifact_immutable() RETURNS trigger AS $$
DECLARE
  version_status text;
BEGIN
  SELECT status INTO version_status FROM marketplace_pluginversion WHERE id = OLD.version_id;
  IF version_status = 'published' AND (TG_OP = 'DELETE'
       OR NEW.sha256 IS DISTINCT FROM OLD.sha256 OR NEW.path IS DISTINCT FROM OLD.path
       OR NEW.filename IS DISTINCT FROM OLD.filename OR NEW.size IS DISTINCT FROM OLD.size
       OR NEW.version_id IS DISTINCT FROM OLD.version_id) THEN
    RAISE EXCEPTION 'artifact % of a published version is immutable', OLD.filename
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER marketplace_artifact_immutable
BEFORE UPDATE OR DELETE ON marketplace_artifact
FOR EACH ROW EXECUTE FUNCTION marketplace_artifact_immutable();
"""

DROP = """
DROP TRIGGER IF EXISTS marketplace_artifact_immutable ON marketplace_artifact;
DROP FUNCTION IF EXISTS marketplace_artifact_immutable();
DROP TRIGGER IF EXISTS marketplace_version_immutable ON marketplace_pluginversion;
DROP FUNCTION IF EXISTS marketplace_version_immutable();
"""


class Migration(migrations.Migration):
    dependencies = [("marketplace", "0001_initial")]
    operations = [migrations.RunSQL(VERSION_GUARD, DROP)]
