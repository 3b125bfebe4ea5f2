"""The server half of team memory: PostgreSQL tables, row-level security, migrations.

Everything lives in the schema ``memspool``, owned by the role that ran
``memspool team init`` (the team's administrator). People connect as roles
of their own that are members of the group role ``memspool_member``; the
``members`` table says which projects each role belongs to, and row-level
security on every table limits a role to those projects: a role that is no
member of a project reads nothing of it, even with plain SQL.

The change log is the ``seq`` column of ``memories`` and ``provenance``,
indexed per project. Every write to a project takes that project's advisory
lock until its transaction ends, then draws ``seq`` from one sequence, so
within a project the numbers are handed out in commit order: a reader that
saw ``seq`` N has seen every committed change of that project below N, and
pulling "everything after the last ``seq`` I saw" never skips a change.
Who made a change is set by the server (``session_user``), not by the client.

Migrations are numbered; ``memspool.schema_version`` holds the number the
server is at. ``init`` applies the missing ones under a lock, so running it
twice, or from two machines at once, is harmless.
"""

from __future__ import annotations

from typing import Final

__all__ = ["GROUP_ROLE", "MIGRATIONS", "SCHEMA", "SCHEMA_VERSION"]

SCHEMA: Final = "memspool"
#: The group role every person's role is granted to use team memory at all.
GROUP_ROLE: Final = "memspool_member"
#: The advisory lock ``init`` holds while it migrates (an arbitrary constant).
MIGRATE_LOCK: Final = 7_345_221_004

MIGRATIONS: Final[list[str]] = [
    # 1: projects, members, memories with their provenance and history, aliases
    # (a shared memory someone else stated first), the change log, and the
    # row-level security that keeps every table to the role's projects.
    """
    CREATE TABLE memspool.schema_version (version integer NOT NULL);
    INSERT INTO memspool.schema_version VALUES (0);

    CREATE TABLE memspool.projects (
        id         text PRIMARY KEY,
        name       text NOT NULL,
        created_by name NOT NULL DEFAULT session_user,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE memspool.members (
        project_id text NOT NULL REFERENCES memspool.projects ON DELETE CASCADE,
        role       name NOT NULL,
        admin      boolean NOT NULL DEFAULT false,
        added_by   name NOT NULL DEFAULT session_user,
        added_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, role)
    );
    CREATE INDEX members_role ON memspool.members (role);

    CREATE SEQUENCE memspool.change_seq;
    CREATE TABLE memspool.memories (
        gid           uuid PRIMARY KEY,
        project_id    text NOT NULL REFERENCES memspool.projects,
        key           text NOT NULL,
        type          text NOT NULL,
        summary       text NOT NULL,
        body          text NOT NULL,
        status        text NOT NULL
                      CHECK (status IN ('live', 'superseded', 'merged', 'forgotten')),
        superseded_by uuid,
        revision      integer NOT NULL DEFAULT 1,
        created_at    double precision NOT NULL,
        changed_at    double precision NOT NULL,
        created_by    name NOT NULL DEFAULT session_user,
        created_on    text NOT NULL,
        changed_by    name NOT NULL DEFAULT session_user,
        changed_on    text NOT NULL,
        seq           bigint NOT NULL
    );
    CREATE UNIQUE INDEX memories_live_key ON memspool.memories (project_id, key)
        WHERE status = 'live';
    CREATE INDEX memories_seq ON memspool.memories (project_id, seq);

    CREATE TABLE memspool.provenance (
        id         bigserial PRIMARY KEY,
        gid        uuid NOT NULL REFERENCES memspool.memories,
        project_id text NOT NULL REFERENCES memspool.projects,
        ref        text NOT NULL UNIQUE,
        role       name NOT NULL DEFAULT session_user,
        machine    text NOT NULL,
        session    text NOT NULL,
        source     text NOT NULL,
        action     text NOT NULL,
        at         double precision NOT NULL,
        seq        bigint NOT NULL
    );
    CREATE INDEX provenance_seq ON memspool.provenance (project_id, seq);
    CREATE INDEX provenance_gid ON memspool.provenance (gid);

    CREATE TABLE memspool.history (
        id         bigserial PRIMARY KEY,
        gid        uuid NOT NULL REFERENCES memspool.memories,
        project_id text NOT NULL REFERENCES memspool.projects,
        revision   integer NOT NULL,
        reason     text NOT NULL,
        type       text NOT NULL,
        summary    text NOT NULL,
        body       text NOT NULL,
        by_role    name NOT NULL DEFAULT session_user,
        by_machine text NOT NULL,
        at         double precision NOT NULL
    );
    CREATE INDEX history_gid ON memspool.history (gid);

    CREATE TABLE memspool.aliases (
        gid        uuid PRIMARY KEY,
        project_id text NOT NULL REFERENCES memspool.projects,
        target     uuid NOT NULL REFERENCES memspool.memories
    );

    CREATE FUNCTION memspool.my_projects() RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, memspool AS $$
        SELECT coalesce(array_agg(project_id), '{}') FROM memspool.members
        WHERE role = session_user
    $$;

    CREATE FUNCTION memspool.is_owner() RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, memspool AS $$
        SELECT pg_has_role(session_user, nspowner, 'MEMBER') FROM pg_namespace
        WHERE nspname = 'memspool'
    $$;

    CREATE FUNCTION memspool.stamp_memory() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, memspool AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(NEW.project_id, 0));
        NEW.seq := nextval('memspool.change_seq');
        NEW.changed_by := session_user;
        IF TG_OP = 'INSERT' THEN
            NEW.created_by := session_user;
        ELSE
            NEW.gid := OLD.gid;
            NEW.project_id := OLD.project_id;
            NEW.created_by := OLD.created_by;
            NEW.created_on := OLD.created_on;
            NEW.created_at := OLD.created_at;
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER memories_stamp BEFORE INSERT OR UPDATE ON memspool.memories
        FOR EACH ROW EXECUTE FUNCTION memspool.stamp_memory();

    CREATE FUNCTION memspool.stamp_provenance() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, memspool AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(NEW.project_id, 0));
        NEW.seq := nextval('memspool.change_seq');
        NEW.role := session_user;
        RETURN NEW;
    END $$;
    CREATE TRIGGER provenance_stamp BEFORE INSERT ON memspool.provenance
        FOR EACH ROW EXECUTE FUNCTION memspool.stamp_provenance();

    CREATE FUNCTION memspool.stamp_history() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, memspool AS $$
    BEGIN
        NEW.by_role := session_user;
        RETURN NEW;
    END $$;
    CREATE TRIGGER history_stamp BEFORE INSERT ON memspool.history
        FOR EACH ROW EXECUTE FUNCTION memspool.stamp_history();

    CREATE FUNCTION memspool.create_project(p_id text, p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, memspool AS $$
    DECLARE
        made integer;
    BEGIN
        INSERT INTO memspool.projects (id, name, created_by) VALUES (p_id, p_name, session_user)
            ON CONFLICT (id) DO NOTHING;
        GET DIAGNOSTICS made = ROW_COUNT;
        IF made = 0 THEN
            RETURN false;
        END IF;
        INSERT INTO memspool.members (project_id, role, admin, added_by)
            VALUES (p_id, session_user, true, session_user);
        RETURN true;
    END $$;

    CREATE FUNCTION memspool.grant_member(p_id text, p_role name, p_admin boolean)
    RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, memspool AS $$
    BEGIN
        IF NOT (memspool.is_owner() OR EXISTS (SELECT 1 FROM memspool.members
                WHERE project_id = p_id AND role = session_user AND admin)) THEN
            RAISE EXCEPTION 'only an admin of the project % may grant membership', p_id
                USING ERRCODE = '42501';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_role) THEN
            RAISE EXCEPTION 'there is no role %', p_role USING ERRCODE = '42704';
        END IF;
        IF NOT pg_has_role(p_role, 'memspool_member', 'MEMBER') THEN
            RAISE EXCEPTION 'the role % is not granted memspool_member', p_role
                USING ERRCODE = '42501';
        END IF;
        INSERT INTO memspool.members (project_id, role, admin, added_by)
            VALUES (p_id, p_role, p_admin, session_user)
            ON CONFLICT (project_id, role) DO UPDATE SET admin = excluded.admin;
    END $$;

    CREATE FUNCTION memspool.revoke_member(p_id text, p_role name) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, memspool AS $$
    DECLARE
        gone integer;
    BEGIN
        IF NOT (memspool.is_owner() OR p_role = session_user OR EXISTS (
                SELECT 1 FROM memspool.members
                WHERE project_id = p_id AND role = session_user AND admin)) THEN
            RAISE EXCEPTION 'only an admin of the project % may revoke membership', p_id
                USING ERRCODE = '42501';
        END IF;
        DELETE FROM memspool.members WHERE project_id = p_id AND role = p_role;
        GET DIAGNOSTICS gone = ROW_COUNT;
        RETURN gone > 0;
    END $$;

    REVOKE ALL ON FUNCTION memspool.my_projects(), memspool.is_owner(),
        memspool.create_project(text, text), memspool.grant_member(text, name, boolean),
        memspool.revoke_member(text, name) FROM PUBLIC;

    ALTER TABLE memspool.projects ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memspool.members ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memspool.memories ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memspool.provenance ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memspool.history ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memspool.aliases ENABLE ROW LEVEL SECURITY;
    -- (SELECT f()) is evaluated once per query, not once per row.
    CREATE POLICY member_projects ON memspool.projects FOR SELECT
        USING (id = ANY (CAST((SELECT memspool.my_projects()) AS text[])));
    CREATE POLICY member_members ON memspool.members FOR SELECT
        USING (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])));
    CREATE POLICY member_rows ON memspool.memories
        USING (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])))
        WITH CHECK (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])));
    CREATE POLICY member_rows ON memspool.provenance
        USING (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])))
        WITH CHECK (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])));
    CREATE POLICY member_rows ON memspool.history
        USING (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])))
        WITH CHECK (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])));
    CREATE POLICY member_rows ON memspool.aliases
        USING (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])))
        WITH CHECK (project_id = ANY (CAST((SELECT memspool.my_projects()) AS text[])));

    GRANT USAGE ON SCHEMA memspool TO memspool_member;
    GRANT SELECT ON memspool.schema_version, memspool.projects, memspool.members
        TO memspool_member;
    GRANT SELECT, INSERT, UPDATE ON memspool.memories, memspool.aliases TO memspool_member;
    GRANT SELECT, INSERT ON memspool.provenance TO memspool_member;
    GRANT SELECT, INSERT, DELETE ON memspool.history TO memspool_member;
    GRANT USAGE ON SEQUENCE memspool.change_seq, memspool.provenance_id_seq,
        memspool.history_id_seq TO memspool_member;
    GRANT EXECUTE ON FUNCTION memspool.my_projects(), memspool.is_owner(),
        memspool.create_project(text, text), memspool.grant_member(text, name, boolean),
        memspool.revoke_member(text, name) TO memspool_member;
    """,
]

#: The version this memspool writes and reads.
SCHEMA_VERSION: Final = len(MIGRATIONS)
